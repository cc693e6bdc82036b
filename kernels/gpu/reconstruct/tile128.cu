// The tile128 variant (FusedVariant::tile128), u8 output: out = round_to_u8(US_k V_k^T), written
// straight into the interleaved (HWC) output.
//
// Why not tile64's 4 x 4 per thread: from k ~ 16 up the reconstruction is FMA-bound (2k FLOPs per
// output byte against ~24 FLOP/byte machine balance on an H100), and a 4 x 4 patch spends about a
// third of its issue slots on shared loads and loop overhead. Here:
//  - one block = one 128 x 128 pixel tile of one task (blockIdx.z), all channels, 256 threads;
//  - each thread accumulates an 8 x 8 patch (2 x 2 quads of 4 x 4, 64 rows/columns apart) in
//    registers: per k, 4 float4 shared loads feed 64 FMAs (4 x 4: 2 feed 16);
//  - a warp covers 4 x 8 threads, so each float4 shared load of a warp touches 64 or 128
//    contiguous bytes: one wavefront, no bank conflicts;
//  - k advances in slices of 16, double-buffered in shared memory, and the pipeline runs across
//    channels too (step = channel x slice), so there is one __syncthreads per slice and no
//    pipeline restart per channel;
//  - when a channel's last slice is done, its patch is rounded into the shared staging tile, and
//    after the last channel the tile is copied out with 16-byte stores (tile_io.cuh).
// Summation per output is k = 0, 1, ..., rank - 1, one fmaf each, from 0: tile64's order, so
// their pixels are identical. Rounding is round_to_u8_bits (tile_io.cuh): bit-identical to
// round_to_u8, two FMNMX fewer per pixel.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/gpu/reconstruct/variants.hpp"
#include "kernels/gpu/reconstruct/tile_pipeline.cuh"
#include "kernels/gpu/reconstruct/tile_io.cuh"

namespace svdserve::gpu {
namespace {

using detail::kStoreBytes;

constexpr uint32_t kTile = 128;         // pixels per tile side
constexpr uint32_t kHalfTile = kTile / 2;  // the second quad of a patch starts here
// k per shared-memory slice. 16 rather than 8: a slice's FMAs (~2 us at 2 blocks/SM) then cover
// the global (mostly L2) latency of the next slice's prefetch, with half the __syncthreads
// (8 deep: k = 256 at 58 % of the FP32 FMA peak, k = 64 at 50 %; H100).
constexpr uint32_t kSliceDepth = 16;
constexpr uint32_t kQuad = 4;           // a patch is 2 x 2 quads of 4 x 4
constexpr uint32_t kPatch = 2 * kQuad;  // 8 x 8 outputs per thread, per channel
constexpr uint32_t kThreadsPerSide = kTile / kPatch;  // 16 x 16 threads
constexpr uint32_t kThreads = kThreadsPerSide * kThreadsPerSide;
constexpr uint32_t kWarpSize = 32;
constexpr uint32_t kWarpThreadCols = 8;  // a warp is 4 x 8 threads (see the header comment)
constexpr uint32_t kWarpThreadRows = kWarpSize / kWarpThreadCols;
constexpr uint32_t kWarpsPerTileRow = kThreadsPerSide / kWarpThreadCols;
constexpr int kMinBlocksPerSm = 2;  // caps registers at 128: 64 accumulators + 16 operands + ...

static_assert(kThreads == 256);

using Slice = float[kSliceDepth][kTile];
using Patch = float[kPatch][kPatch];

constexpr std::size_t kSlicesBytes = 2 * sizeof(Slice);  // double-buffered
constexpr std::size_t kStagingOffset = 2 * kSlicesBytes;  // US slices, then V slices
static_assert(kStagingOffset % kStoreBytes == 0);

template <uint32_t kChannels>
constexpr uint32_t pitch() {
  return detail::staging_pitch<uint8_t, kChannels, kTile>();
}

template <uint32_t kChannels>
constexpr std::size_t shared_bytes() {
  return kStagingOffset + std::size_t{kTile} * pitch<kChannels>();
}

// Patch row (or column) p of a thread whose quad starts at `first`: p < 4 in the first quad,
// p >= 4 in the second, 64 further on.
__device__ __forceinline__ uint32_t patch_offset(uint32_t first, uint32_t p) {
  return first + (p / kQuad) * kHalfTile + p % kQuad;
}

__device__ __forceinline__ void accumulate_k(const Slice& us, const Slice& v, uint32_t kk,
                                             uint32_t quad_row, uint32_t quad_col, Patch& acc) {
  const float4 a_lo = *reinterpret_cast<const float4*>(&us[kk][quad_row]);
  const float4 a_hi = *reinterpret_cast<const float4*>(&us[kk][quad_row + kHalfTile]);
  const float4 b_lo = *reinterpret_cast<const float4*>(&v[kk][quad_col]);
  const float4 b_hi = *reinterpret_cast<const float4*>(&v[kk][quad_col + kHalfTile]);
  const float a[kPatch] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
  const float b[kPatch] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
  for (uint32_t r = 0; r < kPatch; ++r) {
#pragma unroll
    for (uint32_t c = 0; c < kPatch; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
  }
}

template <uint32_t kChannels>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    fused_reconstruct_tile128_kernel(const ReconstructTask* __restrict__ tasks, uint32_t height,
                                     uint32_t width) {
  constexpr uint32_t kPitch = pitch<kChannels>();
  static_assert(kPitch % kStoreBytes == 0);

  extern __shared__ __align__(16) unsigned char shared[];
  auto* const us_slices = reinterpret_cast<Slice*>(shared);
  auto* const v_slices = reinterpret_cast<Slice*>(shared + kSlicesBytes);
  unsigned char* const staging = shared + kStagingOffset;

  const ReconstructTask task = tasks[blockIdx.z];
  const detail::OutputTile<kTile, kThreads, kChannels, kPitch> tile(task, width);

  const uint32_t warp = threadIdx.x / kWarpSize;
  const uint32_t lane = threadIdx.x % kWarpSize;
  const uint32_t thread_row = warp / kWarpsPerTileRow * kWarpThreadRows + lane / kWarpThreadCols;
  const uint32_t thread_col = warp % kWarpsPerTileRow * kWarpThreadCols + lane % kWarpThreadCols;
  const uint32_t quad_row = thread_row * kQuad;
  const uint32_t quad_col = thread_col * kQuad;

  Patch acc = {};
  const auto multiply = [&](const float* us_floats, const float* v_floats, uint32_t depth) {
    const Slice& us_slice = *reinterpret_cast<const Slice*>(us_floats);
    const Slice& v_slice = *reinterpret_cast<const Slice*>(v_floats);
    if (depth == kSliceDepth) {
#pragma unroll
      for (uint32_t kk = 0; kk < kSliceDepth; ++kk) {
        accumulate_k(us_slice, v_slice, kk, quad_row, quad_col, acc);
      }
    } else {
#pragma unroll 1
      for (uint32_t kk = 0; kk < depth; ++kk) {
        accumulate_k(us_slice, v_slice, kk, quad_row, quad_col, acc);
      }
    }
  };
  // A complete channel: its patch rounded into the staging tile. Rows and columns past the image
  // edge land there too (the tile is always whole); the copy-out never reads them.
  const auto finish_channel = [&](uint32_t channel) {
#pragma unroll
    for (uint32_t r = 0; r < kPatch; ++r) {
      const uint32_t row = patch_offset(quad_row, r);
      unsigned char* const stage_row = tile.staged(staging, row, channel);
#pragma unroll
      for (uint32_t c = 0; c < kPatch; ++c) {
        stage_row[patch_offset(quad_col, c) * kChannels] =
            static_cast<uint8_t>(detail::round_to_u8_bits(acc[r][c]));
        acc[r][c] = 0.0F;
      }
    }
  };
  detail::stream_slices<kTile, kSliceDepth, kThreads, kTile, kChannels>(
      task, tile.row0, tile.col0, height, width, &us_slices[0][0][0], &v_slices[0][0][0],
      multiply, finish_channel);

  tile.copy_out(staging, height, width);
}

}  // namespace

namespace variants {

// u8 only: an f32 staging tile of 128 x 128 x 4 channels (256 KiB) would not fit shared memory.
bool Tile128::can_implement(const ReconstructLaunch& launch) noexcept {
  return launch.pixels == OutputPixels::u8;
}

uint32_t Tile128::tile_rows() noexcept { return kTile; }

void Tile128::run(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
                  const ReconstructLaunch& /*launch*/, StreamView stream) {
  dispatch_channels(shape.channels, [&](auto channels) {
    constexpr uint32_t kChannels = decltype(channels)::value;
    detail::launch_tiles<kTile, kThreads>(fused_reconstruct_tile128_kernel<kChannels>,
                                          shared_bytes<kChannels>(), tasks_device, count, shape,
                                          stream);
  });
}

}  // namespace variants
}  // namespace svdserve::gpu
