#include "server/process/reflection_option.hpp"

#include <grpcpp/ext/proto_server_reflection_plugin.h>

#include <algorithm>

namespace svdserve {

void ReflectionOption::UpdateArguments(grpc::ChannelArguments* /*arguments*/) {}

void ReflectionOption::UpdatePlugins(
    std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) {
  auto reflection = std::make_unique<grpc::reflection::ProtoServerReflectionPlugin>();
  const std::string name = reflection->name();
  // Exactly one or none, whatever the process registered before.
  std::erase_if(*plugins, [&](const auto& plugin) { return plugin->name() == name; });
  if (enabled_) plugins->push_back(std::move(reflection));
}

}  // namespace svdserve
