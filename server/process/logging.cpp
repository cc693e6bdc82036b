#include "server/process/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <memory>
#include <string>

#include "kernels/errors.hpp"

namespace svdserve {

spdlog::logger& log() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto created = spdlog::stderr_color_mt("svdserve");
    created->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] [tid=%t] %v");
    return created;
  }();
  return *logger;
}

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
