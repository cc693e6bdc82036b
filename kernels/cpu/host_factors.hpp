#pragma once
// The CPU backend's factors to and from HostFactors: the same layout, so a copy each way.

#include <memory>

#include "kernels/cpu/factors.hpp"
#include "kernels/host_factors.hpp"

namespace svdserve {

[[nodiscard]] HostFactors to_host(const CpuFactors& factors);
// Throws ResourceExhausted when host memory runs out.
[[nodiscard]] std::shared_ptr<const CpuFactors> cpu_factors_from_host(const HostFactors& host);

}  // namespace svdserve
