#include "kernels/gpu/reconstruct/wgmma_operands.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <tuple>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/reconstruct/wgmma_ptx.cuh"

namespace svdserve::gpu {
namespace {

using Layout = WgmmaOperandLayout;
constexpr uint32_t kThreads = 256;

// Where a factor's blocks are (WgmmaOperandLayout): [channel][tile][k-step], 8 KiB each, from
// `first` on; `tiles` per channel (row tiles for US, column tiles for V), `extent` the rows or
// columns of the image (height for US, width for V).
struct FactorBlocks {
  std::size_t first;
  uint32_t tiles;
  uint32_t extent;
  bool columns_permuted;  // V: wgmma_column_of's order in each group of 8 columns
};

// One thread per (channel, row or column, k) of one factor's blocks (US or V: the same layout),
// writing both FP16 parts of the value times `scale` (a power of two: exact).
__global__ void write_split_operands_kernel(const float* __restrict__ factor, Layout layout,
                                            FactorBlocks blocks, float scale, std::size_t values,
                                            unsigned char* __restrict__ out) {
  const std::size_t index = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (index >= values) return;
  // index = ((channel * tiles + tile) * steps * 16 + k) * 128 + row or column in tile
  const auto in_tile = static_cast<uint32_t>(index % Layout::kTile);
  const std::size_t rest = index / Layout::kTile;
  const std::size_t depth = std::size_t{layout.steps()} * Layout::kDepth;
  const auto k = static_cast<uint32_t>(rest % depth);
  const std::size_t channel_tile = rest / depth;  // channel * tiles + tile
  const uint32_t position = static_cast<uint32_t>(channel_tile % blocks.tiles) * Layout::kTile +
                            in_tile;
  const auto channel = static_cast<uint32_t>(channel_tile / blocks.tiles);
  const std::size_t source =
      (std::size_t{channel} * layout.rank_kept + k) * blocks.extent + position;
  const float value =
      position < blocks.extent && k < layout.rank_kept ? scale * factor[source] : 0.0F;
  // Its FP16 big and small parts: the low halves of split_f16x2 (wgmma_ptx.cuh).
  const detail::SplitF16x2 parts = detail::split_f16x2(value, 0.0F);
  const auto big = static_cast<uint16_t>(parts.big);
  const auto small = static_cast<uint16_t>(parts.small);
  // K-major core matrices of 8 rows (or columns) x 8 values of k (128 bytes), the next 8 a core
  // matrix further; k 8-15 in the block's second half.
  const uint32_t k_in_step = k % Layout::kDepth;
  const uint32_t slot = blocks.columns_permuted ? wgmma_slot_of_column(in_tile) : in_tile;
  const std::size_t offset = k_in_step / 8 * Layout::kHalfStepBytes +
                             slot / 8 * detail::kCoreMatrixBytes + slot % 8 * 16 +
                             k_in_step % 8 * sizeof(uint16_t);
  unsigned char* const block = out + blocks.first +
                               (channel_tile * layout.steps() + k / Layout::kDepth) *
                                   Layout::kStepBytes;
  *reinterpret_cast<uint16_t*>(block + offset) = big;
  *reinterpret_cast<uint16_t*>(block + Layout::kPartBytes + offset) = small;
}

unsigned blocks_for(std::size_t values) {
  return static_cast<unsigned>((values + kThreads - 1) / kThreads);
}

}  // namespace

std::optional<int> wgmma_operand_exponent(double us_bound) {
  constexpr int kMinExponent = 8;      // V's small parts (~2^-12 |v|) times 2^8: mostly normal
  constexpr int kMaxExponent = 15;     // |v| <= 1 times 2^15 stays under FP16's 65504
  constexpr double kUsLimit = 16384.0;  // |US| times 2^-e under 2^14, well inside FP16's range
  if (!std::isfinite(us_bound)) return std::nullopt;
  int exponent = kMinExponent;
  while (std::ldexp(us_bound, -exponent) >= kUsLimit) {
    if (++exponent > kMaxExponent) return std::nullopt;
  }
  return exponent;
}

void check_wgmma_operand_layout(const WgmmaOperandLayout& layout) {
  // The kernel steps between a channel's blocks with 32-bit offsets (wgmma.cu): one channel's
  // US blocks, and its V blocks, must stay under 4 GiB, which takes height x rank and width x rank
  // under 2^30 (the default image limit, 8192 x 8192, keeps both under 2^26).
  const std::size_t channel_us_bytes = layout.us_offset(1, 0, 0);
  const std::size_t channel_v_bytes = layout.v_offset(1, 0, 0) - layout.v_offset(0, 0, 0);
  if (std::max(channel_us_bytes, channel_v_bytes) >= (std::size_t{1} << 32)) {
    throw InvalidArgument("a " + std::to_string(layout.shape.width) + " x " +
                          std::to_string(layout.shape.height) + " image at rank " +
                          std::to_string(layout.rank_kept) +
                          " is too large for the wgmma reconstruction's operands; lower the "
                          "maximum rank or the image size");
  }
}

void write_wgmma_operands(const float* us, const float* v, const WgmmaOperandLayout& layout,
                          int exponent, void* operands, StreamView stream) {
  check_wgmma_operand_layout(layout);
  auto* const out = static_cast<unsigned char*>(operands);
  const std::size_t depth = std::size_t{layout.steps()} * Layout::kDepth;
  const uint32_t channels = layout.shape.channels;
  const FactorBlocks us_blocks{0, layout.row_tiles(), layout.shape.height, false};
  const FactorBlocks v_blocks{layout.v_offset(0, 0, 0), layout.col_tiles(), layout.shape.width,
                              true};
  for (const auto& [factor, blocks, scale] :
       {std::tuple{us, us_blocks, std::ldexp(1.0F, -exponent)},
        std::tuple{v, v_blocks, std::ldexp(1.0F, exponent)}}) {
    const std::size_t values = std::size_t{channels} * blocks.tiles * depth * Layout::kTile;
    if (values == 0) return;
    write_split_operands_kernel<<<blocks_for(values), kThreads, 0, stream.value()>>>(
        factor, layout, blocks, scale, values, out);
    SVDSERVE_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace svdserve::gpu
