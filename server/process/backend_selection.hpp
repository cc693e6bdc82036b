#pragma once
// Chooses the compute backend from the config: the GPU when asked for or (auto) when one is
// usable, else the CPU, saying which in the log; on the GPU, one device or several
// (gpu_devices: MultiDeviceBackend).

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/backend.hpp"
#include "svdserve/v1/config.pb.h"

namespace svdserve {

// Throws FailedPrecondition when the GPU is demanded but none is usable.
[[nodiscard]] std::unique_ptr<Backend> make_backend(const v1::ServerConfig& config);

// The factor-store budget of each device: memory_budget_bytes, or the device's default when it
// is 0.
[[nodiscard]] std::vector<std::size_t> device_budget_bytes(const v1::ServerConfig& config,
                                                           const Backend& backend);

}  // namespace svdserve
