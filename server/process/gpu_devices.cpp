#include "server/process/gpu_devices.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

constexpr int kMaxDevices = 64;

}  // namespace

std::optional<std::vector<int>> parse_gpu_devices(std::string_view text) {
  if (text.empty() || text == "all") return std::nullopt;
  std::vector<int> ordinals;
  const auto invalid = [&](const std::string& why) {
    return InvalidArgument("gpu_devices must be \"all\" or CUDA ordinals such as \"0,1\"; '" +
                           std::string(text) + "' " + why);
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    int ordinal = -1;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), ordinal);
    if (item.empty() || error != std::errc{} || end != item.data() + item.size() ||
        ordinal < 0 || ordinal >= kMaxDevices) {
      throw invalid("has '" + std::string(item) + "', not an ordinal 0.." +
                    std::to_string(kMaxDevices - 1));
    }
    if (std::find(ordinals.begin(), ordinals.end(), ordinal) != ordinals.end()) {
      throw invalid("names device " + std::to_string(ordinal) + " twice");
    }
    ordinals.push_back(ordinal);
    start = comma + 1;
  }
  return ordinals;
}

}  // namespace svdserve
