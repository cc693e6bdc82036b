#pragma once
// One image's factors in device memory, one pool allocation per image: the canonical layout
// reconstruct/fused.hpp describes, [US_0 .. US_{C-1}][V_0 .. V_{C-1}], fp32, and, where the wgmma
// kernel will read them (an sm_90a device), the same factors as its operands (wgmma_operands.hpp)
// after it: US's and V's bytes again (V as two FP16 parts), so on an H100 an image holds about 2x
// the canonical bytes, the price of the faster reconstruction. An image whose values are too
// large for FP16 operands (wgmma_operand_exponent) has none, and reconstructs on the tensor
// variant. bytes_resident() counts both.

#include <cstddef>

#include "kernels/factors.hpp"
#include "kernels/gpu/common/device_memory_pool.hpp"
#include "kernels/gpu/reconstruct/wgmma_operands.hpp"

namespace svdserve::gpu {

class GpuFactors final : public Factors {
 public:
  GpuFactors(ImageShape shape, uint32_t rank_kept, std::vector<std::vector<float>> singular_values,
             double energy, DeviceAllocation memory, bool has_wgmma_operands)
      : Factors(shape, rank_kept, std::move(singular_values), energy),
        memory_(std::move(memory)),
        has_wgmma_operands_(has_wgmma_operands) {}

  [[nodiscard]] std::size_t bytes_resident() const noexcept override { return memory_.bytes(); }
  [[nodiscard]] const float* us() const noexcept { return memory_.floats(); }
  [[nodiscard]] const float* v() const noexcept {
    return memory_.floats() + std::size_t{shape().channels} * shape().height * rank_kept();
  }
  // nullptr where the image has none.
  [[nodiscard]] const void* wgmma_operands() const noexcept {
    if (!has_wgmma_operands_) return nullptr;
    return reinterpret_cast<const std::byte*>(memory_.floats()) +
           wgmma_operands_offset(shape(), rank_kept());
  }

  [[nodiscard]] static std::size_t bytes_for(const ImageShape& shape, uint32_t rank,
                                             bool with_wgmma_operands) noexcept {
    if (!with_wgmma_operands) return canonical_bytes(shape, rank);
    return wgmma_operands_offset(shape, rank) + WgmmaOperandLayout{shape, rank}.bytes();
  }
  // Writes the operands of the canonical factors at the start of `memory` (bytes_for(shape, rank,
  // true) of device memory) after them, on `stream` (exponent: wgmma_operand_exponent's).
  static void write_wgmma_operands(float* memory, const ImageShape& shape, uint32_t rank,
                                   int exponent, StreamView stream) {
    const float* v = memory + std::size_t{shape.channels} * shape.height * rank;
    gpu::write_wgmma_operands(memory, v, WgmmaOperandLayout{shape, rank}, exponent,
                              reinterpret_cast<std::byte*>(memory) +
                                  wgmma_operands_offset(shape, rank),
                              stream);
  }
  // Where the operands start: after the canonical factors, aligned for the bulk copies.
  [[nodiscard]] static std::size_t wgmma_operands_offset(const ImageShape& shape,
                                                         uint32_t rank) noexcept {
    constexpr std::size_t kAlignment = 256;
    return (canonical_bytes(shape, rank) + kAlignment - 1) / kAlignment * kAlignment;
  }

 private:
  [[nodiscard]] static std::size_t canonical_bytes(const ImageShape& shape,
                                                   uint32_t rank) noexcept {
    return std::size_t{shape.channels} * rank * (std::size_t{shape.height} + shape.width) *
           sizeof(float);
  }

  DeviceAllocation memory_;
  bool has_wgmma_operands_;
};

}  // namespace svdserve::gpu
