#pragma once
// An image's factors as the wgmma reconstruction kernel reads them (its "operands"), written
// once next to the canonical factors (GpuFactors) on devices that run wgmma. The kernel multiplies
// in FP16 with FP32 accumulators, three products per term for FP32 accuracy (big*big + big*small +
// small*big, each value split into an FP16 big part and the FP16 of what that leaves). Each
// k-step (16 values of k) of one 128-row tile of US, and of one 128-column tile of V, is one
// contiguous block of 8 KiB, so that the kernel's producer fetches a step's operands with two
// bulk copies (the copy engine: no thread loads, as far ahead as its shared memory allows), and
// its wgmmas read both straight from shared memory:
//  - US scaled by 2^-e and V by 2^e, each split once into FP16 big and small parts;
//  - each part in wgmma's K-major core-matrix layout (wgmma_ptx.cuh): 8 rows (or columns) x 8
//    values of k, 128 bytes; row group g at byte 128 g.
// Each block holds its k-step in two halves of 4 KiB, k 0-7 then k 8-15, so that a tile of rank
// 8 or less copies the first halves only (kHalfStepBytes); a half is the big part's core
// matrices, then the small part's (kPartBytes further).
// V's columns are permuted in each group of 8 (wgmma_column_of), so that the four threads that
// share an accumulator row hold four adjacent pixels: their byte stores then span at most 16
// bytes of the staging row, in banks apart from the other rows'.
// All US blocks come first, [channel][row tile][k-step], then the V blocks, [channel][column
// tile][k-step]. Rows and columns past the image and k past rank_kept are zero. Size: US's and V's
// bytes in FP32 (two FP16 parts each), rounded up to whole tiles and k-steps.
//
// Why the scale: FP16 holds magnitudes up to 65504, and its normal numbers start at 2^-14.
// US = U diag(S) reaches the image's size (|US[i][k]| <= the channel's Frobenius norm), while V's
// entries are at most 1 (orthonormal columns) and their small parts near 2^-12 of that. Scaling
// US down and V up by the same power of two leaves every product exact and keeps both within
// FP16's range (wgmma_operand_exponent).
// This header compiles without nvcc.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/image.hpp"

namespace svdserve::gpu {

struct WgmmaOperandLayout {
  static constexpr uint32_t kTile = 128;  // rows of a US tile, columns of a V tile
  static constexpr uint32_t kDepth = 16;  // values of k in one k-step (FP16 wgmma: k16)
  // One k-step of a tile of either factor: two FP16 parts.
  static constexpr std::size_t kStepBytes = std::size_t{kTile} * kDepth * 2 * sizeof(uint16_t);
  static constexpr std::size_t kHalfStepBytes = kStepBytes / 2;  // k 0-7 or 8-15
  static constexpr std::size_t kPartBytes = kHalfStepBytes / 2;  // one part of a half

  ImageShape shape;
  uint32_t rank_kept = 0;

  [[nodiscard]] constexpr uint32_t steps() const { return (rank_kept + kDepth - 1) / kDepth; }
  [[nodiscard]] constexpr uint32_t row_tiles() const { return (shape.height + kTile - 1) / kTile; }
  [[nodiscard]] constexpr uint32_t col_tiles() const { return (shape.width + kTile - 1) / kTile; }
  [[nodiscard]] constexpr std::size_t us_offset(uint32_t channel, uint32_t row_tile,
                                                uint32_t step) const {
    return ((std::size_t{channel} * row_tiles() + row_tile) * steps() + step) * kStepBytes;
  }
  [[nodiscard]] constexpr std::size_t v_offset(uint32_t channel, uint32_t col_tile,
                                               uint32_t step) const {
    return us_offset(shape.channels, 0, 0) +
           ((std::size_t{channel} * col_tiles() + col_tile) * steps() + step) * kStepBytes;
  }
  [[nodiscard]] constexpr std::size_t bytes() const { return v_offset(shape.channels, 0, 0); }
};

// V's order: a wgmma accumulator column ("slot", n = 8j + 2t + e: thread t of its row's four
// holds n and n + 1, wgmma_ptx.cuh) and the tile column it holds, 8j + 4e + t. A thread's two
// columns of a group are 4 apart; the four threads' columns for one (j, e) are adjacent. Why:
// in the natural order the four threads' bytes (two columns each, 3 channels) span 24 bytes and
// the eight rows of a warp's byte store collided in the staging's banks (1.70 shared-memory
// wavefronts a store, ncu); four adjacent pixels are at most 16 bytes (1.13 wavefronts a store).
[[nodiscard]] constexpr uint32_t wgmma_column_of(uint32_t slot) {
  return slot / 8 * 8 + slot % 2 * 4 + slot % 8 / 2;
}
[[nodiscard]] constexpr uint32_t wgmma_slot_of_column(uint32_t column) {
  return column / 8 * 8 + column % 4 * 2 + column % 8 / 4;
}
static_assert(wgmma_slot_of_column(wgmma_column_of(13)) == 13 && wgmma_column_of(2) == 1 &&
              wgmma_column_of(1) == 4);

// The e of the 2^-e and 2^e scales for factors whose US entries are at most `us_bound` in
// magnitude (for a decomposed image: its largest channel Frobenius norm) and whose V entries are
// at most 1: at least 8 (V's small parts clear of FP16's subnormals), then as large as keeps US
// under 2^14; none where that would take V past 2^15 (us_bound over 2^29; the image then
// reconstructs without these operands).
[[nodiscard]] std::optional<int> wgmma_operand_exponent(double us_bound);

// Throws InvalidArgument where one channel's blocks of a factor pass 4 GiB (width or height x
// rank about 2^30 or more: 4 bytes a value in both factors): the kernel steps between them with
// 32-bit offsets.
void check_wgmma_operand_layout(const WgmmaOperandLayout& layout);

// Writes the operands of one image (us, v: its canonical factors, fused.hpp's layout) to
// `operands` (device, layout.bytes(), 16-byte aligned), on `stream`, US scaled by 2^-exponent and
// V by 2^exponent (wgmma_operand_exponent). Checks the layout first (check_wgmma_operand_layout),
// before any work.
void write_wgmma_operands(const float* us, const float* v, const WgmmaOperandLayout& layout,
                          int exponent, void* operands, StreamView stream);

}  // namespace svdserve::gpu
