#pragma once
// An image's factors as the wgmma reconstruction kernel reads them (its "operands"), written
// once next to the canonical factors (GpuFactors) on devices that run wgmma. Each k-step (8 values
// of k) of one 128-row tile of US, and of one 128-column tile of V, is one contiguous block, so
// that a block of the kernel fetches a step's operands with two bulk copies (the copy engine: no
// thread loads, as far ahead as its shared memory allows):
//  - US blocks (4 KiB): raw FP32, in the order the threads hold them in wgmma's register-A layout
//    (thread T's 4 values at byte 16 T; wgmma_tf32.cuh), so each thread reads its fragment with
//    one 16-byte shared load and splits it into TF32 parts itself;
//  - V blocks (8 KiB): split once into TF32 big and small parts, each part in wgmma's K-major
//    core-matrix layout (wgmma_tf32.cuh), the big part first.
// All US blocks come first, [channel][row tile][k-step], then the V blocks, [channel][column
// tile][k-step]. Rows and columns past the image and k past rank_kept are zero. Size: US's bytes
// plus twice V's, rounded up to whole tiles and k-steps.
// This header compiles without nvcc.

#include <cstddef>
#include <cstdint>

#include "kernels/gpu/cuda_resources.hpp"
#include "kernels/image.hpp"

namespace svdserve::gpu {

struct WgmmaOperandLayout {
  static constexpr uint32_t kTile = 128;  // rows of a US tile, columns of a V tile
  static constexpr uint32_t kDepth = 16;  // values of k in one k-step (FP16 wgmma: k16)
  static constexpr std::size_t kUsStepBytes = std::size_t{kTile} * kDepth * sizeof(float);
  static constexpr std::size_t kVStepBytes = std::size_t{kTile} * kDepth * 2 * sizeof(uint16_t);

  ImageShape shape;
  uint32_t rank_kept = 0;

  [[nodiscard]] constexpr uint32_t steps() const { return (rank_kept + kDepth - 1) / kDepth; }
  [[nodiscard]] constexpr uint32_t row_tiles() const { return (shape.height + kTile - 1) / kTile; }
  [[nodiscard]] constexpr uint32_t col_tiles() const { return (shape.width + kTile - 1) / kTile; }
  [[nodiscard]] constexpr std::size_t us_offset(uint32_t channel, uint32_t row_tile,
                                                uint32_t step) const {
    return ((std::size_t{channel} * row_tiles() + row_tile) * steps() + step) * kUsStepBytes;
  }
  [[nodiscard]] constexpr std::size_t v_offset(uint32_t channel, uint32_t col_tile,
                                               uint32_t step) const {
    return us_offset(shape.channels, 0, 0) +
           ((std::size_t{channel} * col_tiles() + col_tile) * steps() + step) * kVStepBytes;
  }
  [[nodiscard]] constexpr std::size_t bytes() const { return v_offset(shape.channels, 0, 0); }
};

// Throws InvalidArgument where one channel's blocks of a factor pass 4 GiB (width or height x
// rank about 2^29 or more): the kernel steps between them with 32-bit offsets.
void check_wgmma_operand_layout(const WgmmaOperandLayout& layout);

// Writes the operands of one image (us, v: its canonical factors, reconstruct.hpp's layout) to
// `operands` (device, layout.bytes(), 16-byte aligned), on `stream`. Checks the layout first
// (check_wgmma_operand_layout), before any work.
void write_wgmma_operands(const float* us, const float* v, const WgmmaOperandLayout& layout,
                          void* operands, StreamView stream);

}  // namespace svdserve::gpu
