#pragma once
// The one named logger of the server. Messages carry key=value fields so logs can be grepped.

#include <spdlog/spdlog.h>

#include <string_view>

namespace svdserve {

// Creates the "svdserve" logger on first use (stderr, with thread id and time).
[[nodiscard]] spdlog::logger& log();

// Accepts trace, debug, info, warn, error, off; throws InvalidArgument otherwise.
void set_log_level(std::string_view level);

}  // namespace svdserve
