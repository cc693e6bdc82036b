#include "server/process/logging.hpp"

#include <string>

#include "kernels/errors.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {

void set_log_level(std::string_view level) {
  const auto parsed = spdlog::level::from_str(std::string(level));
  // from_str answers "off" for anything it does not know; only accept "off" when asked for.
  if (parsed == spdlog::level::off && level != "off") {
    throw InvalidArgument("log_level '" + std::string(level) +
                          "' is not one of trace, debug, info, warn, error, off");
  }
  log().set_level(parsed);
}

}  // namespace svdserve
