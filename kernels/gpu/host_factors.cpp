#include "kernels/gpu/host_factors.hpp"

#include <cmath>
#include <limits>
#include <new>
#include <vector>

#include "kernels/gpu/common/cuda_check.hpp"

namespace svdserve::gpu {
namespace {

// Whole channel planes of both factors: [US_0 .. US_{C-1}][V_0 .. V_{C-1}].
std::size_t canonical_floats(const ImageShape& shape, uint32_t rank) {
  return std::size_t{shape.channels} * rank * (std::size_t{shape.height} + shape.width);
}

}  // namespace

HostFactors to_host(const GpuFactors& factors, StreamView stream) try {
  const ImageShape& shape = factors.shape();
  const uint32_t rank = factors.rank_kept();
  std::vector<float> canonical(canonical_floats(shape, rank));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(canonical.data(), factors.us(),
                                      canonical.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                      stream.value()));
  stream.synchronize();

  HostFactors host{.shape = shape,
                   .rank_kept = rank,
                   .energy = factors.energy(),
                   .u = std::vector<std::vector<float>>(shape.channels),
                   .singular_values = factors.all_singular_values(),
                   .vt = std::vector<std::vector<float>>(shape.channels)};
  const std::size_t h = shape.height;
  const std::size_t w = shape.width;
  const float* v = canonical.data() + shape.channels * h * rank;
  for (uint32_t c = 0; c < shape.channels; ++c) {
    const float* us = canonical.data() + c * h * rank;
    const std::vector<float>& s = host.singular_values[c];
    std::vector<float>& u = host.u[c];
    u.resize(h * rank);
    for (std::size_t k = 0; k < rank; ++k) {
      // A zero (or subnormal, whose inverse overflows) singular value leaves its column of US
      // zero or nearly: U's column does not matter there.
      const float scale = std::abs(s[k]) >= std::numeric_limits<float>::min() ? 1.0f / s[k] : 0.0f;
      for (std::size_t i = 0; i < h; ++i) u[i * rank + k] = us[k * h + i] * scale;
    }
    host.vt[c].assign(v + c * w * rank, v + (c + 1) * w * rank);
  }
  return host;
} catch (const std::bad_alloc&) {
  throw ResourceExhausted("not enough host memory to copy an image's factors from the GPU");
}

std::shared_ptr<const GpuFactors> gpu_factors_from_host(const HostFactors& host,
                                                        DeviceMemoryPool& pool,
                                                        bool with_wgmma_operands,
                                                        StreamView stream) try {
  const ImageShape& shape = host.shape;
  const uint32_t rank = host.rank_kept;
  const std::size_t h = shape.height;
  const std::size_t w = shape.width;
  std::vector<float> canonical(canonical_floats(shape, rank));
  float* v = canonical.data() + shape.channels * h * rank;
  for (uint32_t c = 0; c < shape.channels; ++c) {
    float* us = canonical.data() + c * h * rank;
    for (std::size_t k = 0; k < rank; ++k) {
      const float s = host.singular_values[c][k];
      for (std::size_t i = 0; i < h; ++i) us[k * h + i] = host.u[c][i * rank + k] * s;
    }
    std::copy(host.vt[c].begin(), host.vt[c].end(), v + c * w * rank);
  }
  // Every channel's norm is at most the image's: a bound the operands' scale may use.
  const std::optional<int> exponent =
      with_wgmma_operands ? wgmma_operand_exponent(std::sqrt(host.energy)) : std::nullopt;
  DeviceAllocation memory =
      pool.allocate(GpuFactors::bytes_for(shape, rank, exponent.has_value()), stream);
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(memory.floats(), canonical.data(),
                                      canonical.size() * sizeof(float), cudaMemcpyHostToDevice,
                                      stream.value()));
  if (exponent) GpuFactors::write_wgmma_operands(memory.floats(), shape, rank, *exponent, stream);
  stream.synchronize();
  return std::make_shared<const GpuFactors>(shape, rank, host.singular_values, host.energy,
                                            std::move(memory), exponent.has_value());
} catch (const std::bad_alloc&) {
  throw ResourceExhausted("not enough host memory to load an image's factors to the GPU");
}

}  // namespace svdserve::gpu
