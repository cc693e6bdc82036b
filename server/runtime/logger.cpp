#include "server/runtime/logger.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <memory>

namespace svdserve {

spdlog::logger& log() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto created = spdlog::stderr_color_mt("svdserve");
    created->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] [tid=%t] %v");
    return created;
  }();
  return *logger;
}

}  // namespace svdserve
