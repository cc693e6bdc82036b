#pragma once
// The GPUs one server uses (config gpu_devices, --gpu-devices): "all" (the default: every device
// the process sees, CUDA_VISIBLE_DEVICES included) or a comma-separated list of CUDA ordinals.

#include <optional>
#include <string_view>
#include <vector>

namespace svdserve {

// nullopt for all; else the ordinals in the order given. Throws InvalidArgument for anything
// else (an empty item, a repeated or negative ordinal, more than 64).
[[nodiscard]] std::optional<std::vector<int>> parse_gpu_devices(std::string_view text);

}  // namespace svdserve
