#pragma once
// The GPU backend's factors to and from HostFactors. The device keeps US = U diag(S) and V
// column-major (fused.hpp); the host layout is U, S and Vt row-major. V column-major is Vt
// row-major already; U is US transposed and divided by S on the way out, multiplied on the way
// in, so a loaded image reconstructs within an fp32 rounding of the one that was stored.

#include <memory>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/common/device_memory_pool.hpp"
#include "kernels/gpu/gpu_factors.hpp"
#include "kernels/host_factors.hpp"

namespace svdserve::gpu {

// Copies on `stream` and waits for it.
[[nodiscard]] HostFactors to_host(const GpuFactors& factors, StreamView stream);

// Allocates from `pool`, copies on `stream` and waits for it; with_wgmma_operands as the backend
// writes them at decompose.
[[nodiscard]] std::shared_ptr<const GpuFactors> gpu_factors_from_host(const HostFactors& host,
                                                                      DeviceMemoryPool& pool,
                                                                      bool with_wgmma_operands,
                                                                      StreamView stream);

}  // namespace svdserve::gpu
