#include "kernels/gpu/wgmma_operands.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/cuda_check.hpp"
#include "kernels/gpu/wgmma.cuh"

namespace svdserve::gpu {
namespace {

using Layout = WgmmaOperandLayout;
constexpr uint32_t kThreads = 256;
constexpr uint32_t kUsValuesPerThread = 8;  // f16 register-A: 4 registers of two halves
// A US block holds the fragments of the kernel's 256 threads: two warpgroups of 64 rows.
static_assert(Layout::kTile == 2 * detail::kWgmmaRows);
static_assert(Layout::kUsStepBytes == kThreads * kUsValuesPerThread * sizeof(float));

// One thread per value of a US block: thread T of the kernel, its value i (wgmma_f16's
// register-A layout: warp w of warpgroup h holds rows 64 h + 16 w + g and + 8, k 2t, 2t + 1,
// 2t + 8 and 2t + 9, with g = lane / 4, t = lane % 4; value i in register i / 2), times `scale`
// (a power of two: exact). Values 0-3 (k < 8) go to the block's first half, 4-7 to its second.
__global__ void write_us_operands_kernel(const float* __restrict__ us, Layout layout, float scale,
                                         std::size_t values, unsigned char* __restrict__ out) {
  const std::size_t index = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (index >= values) return;
  const auto i = static_cast<uint32_t>(index % kUsValuesPerThread);
  const auto thread = static_cast<uint32_t>(index / kUsValuesPerThread % kThreads);
  // (channel * row_tiles + tile) * steps + step
  const std::size_t block = index / (kUsValuesPerThread * kThreads);
  const auto step = static_cast<uint32_t>(block % layout.steps());
  const auto tile = static_cast<uint32_t>(block / layout.steps() % layout.row_tiles());
  const auto channel = static_cast<uint32_t>(block / layout.steps() / layout.row_tiles());
  const uint32_t lane = thread % 32;
  // value i: register i / 2, half i % 2 (wgmma_f16's register-A layout)
  const uint32_t row = tile * Layout::kTile + thread / 32 * 16 + lane / 4 + 8 * (i / 2 % 2);
  const uint32_t k = step * Layout::kDepth + 2 * (lane % 4) + i % 2 + 8 * (i / 4);
  const uint32_t height = layout.shape.height;
  const std::size_t source = (std::size_t{channel} * layout.rank_kept + k) * height + row;
  const float value = row < height && k < layout.rank_kept ? scale * us[source] : 0.0F;
  auto* const us_block = reinterpret_cast<float*>(out + layout.us_offset(channel, tile, step));
  constexpr uint32_t kHalfValues = kUsValuesPerThread / 2;
  constexpr uint32_t kHalfFloats = Layout::kHalfStepBytes / sizeof(float);
  us_block[i / kHalfValues * kHalfFloats + thread * kHalfValues + i % kHalfValues] = value;
}

// One thread per (channel, column, k) of the V blocks, writing both parts of the value times
// `scale` (a power of two: exact).
__global__ void write_v_operands_kernel(const float* __restrict__ v, Layout layout, float scale,
                                        std::size_t values, unsigned char* __restrict__ out) {
  const std::size_t index = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (index >= values) return;
  // index = ((channel * col_tiles + tile) * steps * 16 + k) * 128 + column in tile
  const auto column_in_tile = static_cast<uint32_t>(index % Layout::kTile);
  const std::size_t rest = index / Layout::kTile;
  const std::size_t depth = std::size_t{layout.steps()} * Layout::kDepth;
  const auto k = static_cast<uint32_t>(rest % depth);
  const auto tile = static_cast<uint32_t>(rest / depth % layout.col_tiles());
  const auto channel = static_cast<uint32_t>(rest / depth / layout.col_tiles());
  const uint32_t column = tile * Layout::kTile + column_in_tile;
  const uint32_t width = layout.shape.width;
  const std::size_t source = (std::size_t{channel} * layout.rank_kept + k) * width + column;
  const float value = column < width && k < layout.rank_kept ? scale * v[source] : 0.0F;
  // Its FP16 big and small parts: the low halves of the kernel's split (wgmma.cuh).
  const detail::SplitF16x2 parts = detail::split_f16x2(value, 0.0F);
  const auto big = static_cast<uint16_t>(parts.big);
  const auto small = static_cast<uint16_t>(parts.small);
  // K-major core matrices of 8 columns x 8 values of k (128 bytes), the next 8 columns a core
  // matrix further; k 8-15 in the block's second half.
  const uint32_t k_in_step = k % Layout::kDepth;
  const std::size_t offset = k_in_step / 8 * Layout::kHalfStepBytes +
                             column_in_tile / 8 * detail::kCoreMatrixBytes +
                             column_in_tile % 8 * 16 + k_in_step % 8 * sizeof(uint16_t);
  unsigned char* const block = out + layout.v_offset(channel, tile, k / Layout::kDepth);
  *reinterpret_cast<uint16_t*>(block + offset) = big;
  *reinterpret_cast<uint16_t*>(block + Layout::kVPartBytes + offset) = small;
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
  // The kernel steps between a channel's blocks with 32-bit offsets (reconstruct_fused_wgmma.cu,
  // TilePlan): one channel's US blocks, and its V blocks, must stay under 4 GiB, which takes
  // height x rank and width x rank under 2^30 (the default image limit, 8192 x 8192,
  // keeps both under 2^26).
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
  const std::size_t us_values =
      std::size_t{layout.shape.channels} * layout.row_tiles() * depth * Layout::kTile;
  const std::size_t v_values =
      std::size_t{layout.shape.channels} * layout.col_tiles() * depth * Layout::kTile;
  if (us_values == 0 || v_values == 0) return;
  write_us_operands_kernel<<<blocks_for(us_values), kThreads, 0, stream.value()>>>(
      us, layout, std::ldexp(1.0F, -exponent), us_values, out);
  SVDSERVE_CUDA_CHECK_LAUNCH();
  write_v_operands_kernel<<<blocks_for(v_values), kThreads, 0, stream.value()>>>(
      v, layout, std::ldexp(1.0F, exponent), v_values, out);
  SVDSERVE_CUDA_CHECK_LAUNCH();
}

}  // namespace svdserve::gpu
