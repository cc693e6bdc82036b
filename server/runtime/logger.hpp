#pragma once
// The one named logger of the server, shared by every layer. Messages carry key=value fields so
// that logs can be grepped. Its level is set by the process (server/process/logging.hpp).

#include <spdlog/spdlog.h>

namespace svdserve {

// Creates the "svdserve" logger on first use (stderr, with thread id and time).
[[nodiscard]] spdlog::logger& log();

}  // namespace svdserve
