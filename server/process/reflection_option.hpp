#pragma once
// gRPC server reflection for one server, on or off. Linking gRPC's reflection library registers
// its plugin for every ServerBuilder of the process; this option adds or removes it for one
// builder, so that a config saying false is obeyed however the library was loaded.

#include <grpcpp/impl/server_builder_option.h>

#include <memory>
#include <vector>

namespace svdserve {

class ReflectionOption final : public grpc::ServerBuilderOption {
 public:
  explicit ReflectionOption(bool enabled) noexcept : enabled_(enabled) {}

  void UpdateArguments(grpc::ChannelArguments* arguments) override;
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override;

 private:
  bool enabled_;
};

}  // namespace svdserve
