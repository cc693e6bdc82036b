#pragma once
// Numbers, sizes and shapes the way the CLI and the bench reports print them.

#include <cstdint>
#include <string>

#include "svdserve/v1/svdserve.pb.h"

namespace svdserve {

// "640x480x3".
[[nodiscard]] std::string shape_text(const v1::Shape& shape);
// "12.3 MiB", "512 B".
[[nodiscard]] std::string bytes_text(std::uint64_t bytes);
// Microseconds as milliseconds with 2 decimals: "12.34".
[[nodiscard]] std::string ms_text(double microseconds);
// Fixed decimals: "0.0423".
[[nodiscard]] std::string fixed_text(double value, int decimals);

}  // namespace svdserve
