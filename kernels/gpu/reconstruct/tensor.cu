// The tensor variant (FusedVariant::tensor), u8 output, on the tensor cores:
// out = round_to_u8(US_k V_k^T), written straight into the interleaved (HWC) output.
//
// Why: from k ~ 16 up the FP32 kernels are bound by instruction issue, not memory: tile128
// (tile128.cu) needs one FMA instruction per multiply-add and, besides them, ~12 instructions per
// output value (rounding, staging, operand loads); it stays near 60 % of the FMA peak at k >= 64
// (cuBLAS SGEMM itself: 79 %). One mma.sync.m16n8k8 instruction does 1,024 multiply-adds on the
// tensor cores, and the rounding and stores run on the other pipes.
//
// Accuracy: TF32 keeps 10 of FP32's 23 mantissa bits, which would move a u8 pixel by a level in
// a few percent of the values. So each factor value x is split into big (x truncated to TF32)
// and small = x - big (split_tf32), and each product is big*big + big*small + small*big (the
// "3xTF32" of CUTLASS): products good to ~2^-18.5 of their size (the dropped small*small and the
// truncation of the small parts), well under 0.1 level for u8 at any rank. The summation order
// differs from the FP32 kernels, so a pixel may differ by one level at a .5 boundary, as between
// the FP32 kernels and cuBLAS.
//
// Layout (the block and its slices are tile128's):
//  - one block = one 128 x 128 pixel tile of one task (blockIdx.z), all channels, 8 warps;
//  - warp w owns a 64 x 32 output patch: 4 x 4 MMA tiles of 16 x 8, 64 FP32 accumulators per
//    thread, in the mma fragment layout (thread = group g = lane / 4 and t = lane % 4: rows g and
//    g + 8, columns 2t and 2t + 1 of each tile);
//  - k advances in shared-memory slices of 16 (two MMA k-steps of 8), double-buffered through
//    registers (tile_pipeline.cuh), one __syncthreads per slice, the pipeline running across
//    channels;
//  - slice rows are padded to 136 floats: a fragment load reads rows t and columns g of a slice,
//    and with a pitch of 8 banks mod 32 the 32 lanes hit 32 different banks;
//  - each channel's accumulators are rounded (round_to_u8_packable: no F2I) into the staging tile
//    that tile128 uses, and after the last channel the tile is copied out with 16-byte stores.
// Ranks are padded with zeros to whole slices (load_four reads nothing at k >= rank), so small
// ranks waste MMAs (policy.cpp says from which rank it wins). It is latency-bound (fragments are
// loaded and split right before their MMAs), not bound by the tensor pipe.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/gpu/reconstruct/variants.hpp"
#include "kernels/gpu/reconstruct/tile_pipeline.cuh"
#include "kernels/gpu/reconstruct/tile_io.cuh"
#include "kernels/gpu/reconstruct/tf32_mma.cuh"

namespace svdserve::gpu {
namespace {

using detail::kStoreBytes;
using detail::mma_tf32;
using detail::split_tf32;
using detail::SplitTf32;

constexpr uint32_t kTile = 128;
constexpr uint32_t kSliceDepth = 16;  // two MMA k-steps
constexpr uint32_t kSlicePitch = kTile + 8;  // floats; see the header comment
constexpr uint32_t kWarpSize = 32;
constexpr uint32_t kThreads = 256;
constexpr uint32_t kWarpRows = 64;  // a warp's output patch
constexpr uint32_t kWarpCols = 32;
constexpr uint32_t kWarpsPerTileRow = kTile / kWarpCols;
static_assert(kThreads / kWarpSize == (kTile / kWarpRows) * kWarpsPerTileRow);
constexpr uint32_t kMmaRows = 16;  // mma.m16n8k8
constexpr uint32_t kMmaCols = 8;
constexpr uint32_t kMmaDepth = 8;
constexpr uint32_t kRowTiles = kWarpRows / kMmaRows;  // per warp
constexpr uint32_t kColTiles = kWarpCols / kMmaCols;
constexpr int kMinBlocksPerSm = 2;  // 16 warps per SM at <= 128 registers (see the header)

using Slice = float[kSliceDepth][kSlicePitch];
// acc[i][j][e]: MMA tile (i, j) of the warp's patch, fragment element e.
using Accumulators = float[kRowTiles][kColTiles][4];

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

// One MMA k-step (k0 .. k0 + 7 of the slice) of the warp's patch (fragment layouts: mma_tf32).
// Each operand is split as it is loaded (split_tf32: two instructions). Three MMAs per tile,
// the small terms first (CUTLASS's order), pass by pass over the four tiles of a row so that the
// three MMAs into one accumulator (each waits for the one before) have three independent ones
// between them.
__device__ __forceinline__ void multiply_step(const Slice& us, const Slice& v, uint32_t k0,
                                              uint32_t patch_row, uint32_t patch_col,
                                              uint32_t group, uint32_t thread_in_group,
                                              Accumulators& acc) {
  const uint32_t k_low = k0 + thread_in_group;  // fragment k = t; the other half at t + 4
  const uint32_t k_high = k_low + kMmaDepth / 2;
  const float* const us_low = &us[k_low][patch_row + group];
  const float* const us_high = &us[k_high][patch_row + group];
  const float* const v_low = &v[k_low][patch_col + group];
  const float* const v_high = &v[k_high][patch_col + group];
  SplitTf32 b[kColTiles][2];
#pragma unroll
  for (uint32_t j = 0; j < kColTiles; ++j) {
    b[j][0] = split_tf32(v_low[j * kMmaCols]);
    b[j][1] = split_tf32(v_high[j * kMmaCols]);
  }
#pragma unroll
  for (uint32_t i = 0; i < kRowTiles; ++i) {
    const uint32_t r = i * kMmaRows;
    const SplitTf32 a0 = split_tf32(us_low[r]);
    const SplitTf32 a1 = split_tf32(us_low[r + kMmaRows / 2]);
    const SplitTf32 a2 = split_tf32(us_high[r]);
    const SplitTf32 a3 = split_tf32(us_high[r + kMmaRows / 2]);
#pragma unroll
    for (uint32_t j = 0; j < kColTiles; ++j) {
      mma_tf32(acc[i][j], a0.small, a1.small, a2.small, a3.small, b[j][0].big, b[j][1].big);
    }
#pragma unroll
    for (uint32_t j = 0; j < kColTiles; ++j) {
      mma_tf32(acc[i][j], a0.big, a1.big, a2.big, a3.big, b[j][0].small, b[j][1].small);
    }
#pragma unroll
    for (uint32_t j = 0; j < kColTiles; ++j) {
      mma_tf32(acc[i][j], a0.big, a1.big, a2.big, a3.big, b[j][0].big, b[j][1].big);
    }
  }
}

template <uint32_t kChannels>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    fused_reconstruct_tensor_kernel(const ReconstructTask* __restrict__ tasks, uint32_t height,
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
  const uint32_t group = lane / 4;
  const uint32_t thread_in_group = lane % 4;
  const uint32_t patch_row = warp / kWarpsPerTileRow * kWarpRows;
  const uint32_t patch_col = warp % kWarpsPerTileRow * kWarpCols;

  Accumulators acc = {};
  // Ranks are padded with zeros to whole slices, so the depth does not matter here.
  const auto multiply = [&](const float* us_floats, const float* v_floats, uint32_t /*depth*/) {
    const Slice& us_slice = *reinterpret_cast<const Slice*>(us_floats);
    const Slice& v_slice = *reinterpret_cast<const Slice*>(v_floats);
#pragma unroll
    for (uint32_t k0 = 0; k0 < kSliceDepth; k0 += kMmaDepth) {
      multiply_step(us_slice, v_slice, k0, patch_row, patch_col, group, thread_in_group, acc);
    }
  };
  // A complete channel: the patch rounded into the staging tile (rows and columns past the image
  // edge too; the copy-out never reads them).
  const auto finish_channel = [&](uint32_t channel) {
#pragma unroll
    for (uint32_t i = 0; i < kRowTiles; ++i) {
#pragma unroll
      for (uint32_t half = 0; half < 2; ++half) {
        const uint32_t row = patch_row + i * kMmaRows + half * (kMmaRows / 2) + group;
        unsigned char* const stage_row = tile.staged(staging, row, channel);
#pragma unroll
        for (uint32_t j = 0; j < kColTiles; ++j) {
          const uint32_t col = patch_col + j * kMmaCols + 2 * thread_in_group;
#pragma unroll
          for (uint32_t e = 0; e < 2; ++e) {
            float& value = acc[i][j][2 * half + e];
            // STS.U8 stores the low byte; round_to_u8_packable leaves it there.
            stage_row[(col + e) * kChannels] =
                static_cast<uint8_t>(detail::round_to_u8_packable(value));
            value = 0.0F;
          }
        }
      }
    }
  };
  detail::stream_slices<kTile, kSliceDepth, kThreads, kSlicePitch, kChannels>(
      task, tile.row0, tile.col0, height, width, &us_slices[0][0][0], &v_slices[0][0][0],
      multiply, finish_channel);

  tile.copy_out(staging, height, width);
}

}  // namespace

namespace variants {

// u8 only, as tile128 (its staging tile). mma.sync TF32 runs on every built architecture.
bool Tensor::can_implement(const ReconstructLaunch& launch) noexcept {
  return launch.pixels == OutputPixels::u8;
}

uint32_t Tensor::tile_rows() noexcept { return kTile; }

void Tensor::run(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
                 const ReconstructLaunch& /*launch*/, StreamView stream) {
  dispatch_channels(shape.channels, [&](auto channels) {
    constexpr uint32_t kChannels = decltype(channels)::value;
    detail::launch_tiles<kTile, kThreads>(fused_reconstruct_tensor_kernel<kChannels>,
                                          shared_bytes<kChannels>(), tasks_device, count, shape,
                                          stream);
  });
}

}  // namespace variants
}  // namespace svdserve::gpu
