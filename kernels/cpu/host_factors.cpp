#include "kernels/cpu/host_factors.hpp"

#include <new>

#include "kernels/errors.hpp"

namespace svdserve {

HostFactors to_host(const CpuFactors& factors) {
  const ImageShape& shape = factors.shape();
  HostFactors host{.shape = shape,
                   .rank_kept = factors.rank_kept(),
                   .energy = factors.energy(),
                   .u = {},
                   .singular_values = factors.all_singular_values(),
                   .vt = {}};
  host.u.reserve(shape.channels);
  host.vt.reserve(shape.channels);
  for (uint32_t c = 0; c < shape.channels; ++c) {
    const CpuChannelFactors& channel = factors.channel(c);
    host.u.emplace_back(channel.u.begin(), channel.u.end());
    host.vt.emplace_back(channel.vt.begin(), channel.vt.end());
  }
  return host;
}

std::shared_ptr<const CpuFactors> cpu_factors_from_host(const HostFactors& host) {
  try {
    std::vector<CpuChannelFactors> channels(host.shape.channels);
    for (uint32_t c = 0; c < host.shape.channels; ++c) {
      channels[c].u.assign(host.u[c].begin(), host.u[c].end());
      channels[c].vt.assign(host.vt[c].begin(), host.vt[c].end());
    }
    return std::make_shared<const CpuFactors>(host.shape, host.rank_kept, host.singular_values,
                                              std::move(channels), host.energy);
  } catch (const std::bad_alloc&) {
    throw ResourceExhausted("not enough host memory to load an image's factors");
  }
}

}  // namespace svdserve
