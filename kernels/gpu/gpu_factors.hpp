#pragma once
// One image's factors in device memory, in the layout kernels/gpu/reconstruct.hpp describes:
// [US_0 .. US_{C-1}][V_0 .. V_{C-1}], fp32, one pool allocation per image.

#include "kernels/factors.hpp"
#include "kernels/gpu/device_memory_pool.hpp"

namespace svdserve::gpu {

class GpuFactors final : public Factors {
 public:
  GpuFactors(ImageShape shape, uint32_t rank_kept, std::vector<std::vector<float>> singular_values,
             double energy, DeviceAllocation memory)
      : Factors(shape, rank_kept, std::move(singular_values), energy), memory_(std::move(memory)) {}

  [[nodiscard]] std::size_t bytes_resident() const noexcept override { return memory_.bytes(); }
  [[nodiscard]] const float* us() const noexcept { return memory_.floats(); }
  [[nodiscard]] const float* v() const noexcept {
    return memory_.floats() + std::size_t{shape().channels} * shape().height * rank_kept();
  }

  [[nodiscard]] static std::size_t bytes_for(const ImageShape& shape, uint32_t rank) noexcept {
    return std::size_t{shape.channels} * rank * (std::size_t{shape.height} + shape.width) *
           sizeof(float);
  }

 private:
  DeviceAllocation memory_;
};

}  // namespace svdserve::gpu
