#pragma once
// Wall-clock time as the API and the repository carry it: milliseconds since the Unix epoch.

#include <chrono>
#include <cstdint>

namespace svdserve {

[[nodiscard]] inline int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace svdserve
