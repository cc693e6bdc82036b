#pragma once
// The log level of the server's logger (server/runtime/logger.hpp), from the config.

#include <string_view>

namespace svdserve {

// Accepts trace, debug, info, warn, error, off; throws InvalidArgument otherwise.
void set_log_level(std::string_view level);

}  // namespace svdserve
