// The tile64 variant (FusedVariant::tile64), the f32 output's kernel: out = US_k V_k^T, computed
// tile by tile and written straight into the interleaved (HWC) output, unclamped.
//
// One block = one 64 x 64 pixel tile of one task (blockIdx.z), all channels:
//  - 256 threads in a 16 x 16 grid, each accumulating a 4 x 4 patch in registers (FP32 FMA),
//    one channel at a time so the 16 accumulators are reused;
//  - k advances in slices of 16. A slice of US (64 rows) and of V (64 columns) sits in shared
//    memory, double-buffered: the next slice is loaded into registers (float4 where aligned)
//    while the current one is multiplied, so there is one __syncthreads per slice;
//  - each channel's values go into a shared staging tile that is laid out like the output rows
//    and copied out with 16-byte stores (the contract is in tile_io.cuh).
// Summation order per output is k = 0, 1, ..., rank - 1, one FMA each: tile128's and rows'.
// cuBLAS sums in another order, so the two can differ in the last bits.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/reconstruct/pixel_convert.cuh"
#include "kernels/gpu/reconstruct/tile_io.cuh"
#include "kernels/gpu/reconstruct/variants.hpp"

namespace svdserve::gpu {
namespace {

using Pixel = float;  // the u8 variants are tile128, rows, tensor and wgmma

using detail::kStoreBytes;
using detail::kVectorFloats;
using detail::load_four;
using detail::misalignment;
using detail::vector_aligned;

constexpr uint32_t kTileRows = 64;     // image rows (i) per block
constexpr uint32_t kTileCols = 64;     // image columns (j) per block
constexpr uint32_t kSliceDepth = 16;   // k per shared-memory slice
constexpr uint32_t kPatchRows = 4;     // outputs per thread, per channel: 4 x 4
constexpr uint32_t kPatchCols = 4;
constexpr uint32_t kThreadsPerTileRow = kTileCols / kPatchCols;
constexpr uint32_t kThreads = (kTileRows / kPatchRows) * kThreadsPerTileRow;
constexpr int kMinBlocksPerSm = 4;  // caps registers at 64: 16 accumulators + prefetch + addresses
constexpr std::size_t kSharedBytesWithoutOptIn = 48 * 1024;

static_assert(kThreads == 256);
// The slice loader gives each thread one float4 of US and one of V.
static_assert(kTileRows == kTileCols);
static_assert(kSliceDepth * kTileRows == kVectorFloats * kThreads);
constexpr uint32_t kLoadersPerSliceRow = kTileRows / kVectorFloats;

constexpr std::size_t kUsSlicesBytes = 2 * kSliceDepth * kTileRows * sizeof(float);
constexpr std::size_t kVSlicesBytes = 2 * kSliceDepth * kTileCols * sizeof(float);
constexpr std::size_t kStagingOffset = kUsSlicesBytes + kVSlicesBytes;
static_assert(kStagingOffset % kStoreBytes == 0);

template <uint32_t kChannels>
constexpr uint32_t staging_pitch() {
  return detail::staging_pitch<Pixel, kChannels, kTileCols>();
}

template <uint32_t kChannels>
constexpr std::size_t shared_bytes() {
  return kStagingOffset + std::size_t{kTileRows} * staging_pitch<kChannels>();
}

using UsSlice = float[kSliceDepth][kTileRows];
using VSlice = float[kSliceDepth][kTileCols];
using Patch = float[kPatchRows][kPatchCols];

__device__ __forceinline__ void accumulate_k(const UsSlice& us, const VSlice& v, uint32_t kk,
                                             uint32_t patch_row, uint32_t patch_col,
                                             Patch& acc) {
  const float4 a4 = *reinterpret_cast<const float4*>(&us[kk][patch_row]);
  const float4 b4 = *reinterpret_cast<const float4*>(&v[kk][patch_col]);
  const float a[kPatchRows] = {a4.x, a4.y, a4.z, a4.w};
  const float b[kPatchCols] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
  for (uint32_t r = 0; r < kPatchRows; ++r) {
#pragma unroll
    for (uint32_t c = 0; c < kPatchCols; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
  }
}

template <uint32_t kChannels>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    fused_reconstruct_tile64_kernel(const ReconstructTask* __restrict__ tasks, uint32_t height,
                             uint32_t width) {
  constexpr uint32_t kPixelBytes = kChannels * sizeof(Pixel);
  constexpr uint32_t kPitch = staging_pitch<kChannels>();
  static_assert(kPitch % kStoreBytes == 0);

  extern __shared__ __align__(16) unsigned char shared[];
  auto* const us_slices = reinterpret_cast<UsSlice*>(shared);
  auto* const v_slices = reinterpret_cast<VSlice*>(shared + kUsSlicesBytes);
  unsigned char* const staging = shared + kStagingOffset;

  const ReconstructTask task = tasks[blockIdx.z];
  const uint32_t row0 = blockIdx.y * kTileRows;
  const uint32_t col0 = blockIdx.x * kTileCols;
  const uint32_t tile_rows = min(kTileRows, height - row0);
  const uint32_t tile_cols = min(kTileCols, width - col0);
  const std::size_t row_bytes = std::size_t{width} * kPixelBytes;
  unsigned char* const tile_out =
      static_cast<unsigned char*>(task.out) + row0 * row_bytes + std::size_t{col0} * kPixelBytes;
  const auto tile_address = reinterpret_cast<std::uintptr_t>(tile_out);

  const uint32_t patch_row = threadIdx.x / kThreadsPerTileRow * kPatchRows;
  const uint32_t patch_col = threadIdx.x % kThreadsPerTileRow * kPatchCols;
  const uint32_t load_k = threadIdx.x / kLoadersPerSliceRow;
  const uint32_t load_element = threadIdx.x % kLoadersPerSliceRow * kVectorFloats;

  // Start of each of this thread's patch rows in the staging tile.
  uint32_t stage_row[kPatchRows];
#pragma unroll
  for (uint32_t r = 0; r < kPatchRows; ++r) {
    const uint32_t row = patch_row + r;
    stage_row[r] = row * kPitch + misalignment(tile_address + row * row_bytes);
  }

  const uint32_t rank = task.rank;
  const uint32_t slices = (rank + kSliceDepth - 1) / kSliceDepth;

#pragma unroll 1
  for (uint32_t channel = 0; channel < kChannels; ++channel) {
    const float* const us = task.us + std::size_t{channel} * height * task.rank_kept;
    const float* const v = task.v + std::size_t{channel} * width * task.rank_kept;
    const bool us_aligned = vector_aligned(us, height);
    const bool v_aligned = vector_aligned(v, width);

    float4 us_next = load_four(us, height, load_k, rank, row0 + load_element, height, us_aligned);
    float4 v_next = load_four(v, width, load_k, rank, col0 + load_element, width, v_aligned);
    *reinterpret_cast<float4*>(&us_slices[0][load_k][load_element]) = us_next;
    *reinterpret_cast<float4*>(&v_slices[0][load_k][load_element]) = v_next;
    __syncthreads();

    Patch acc = {};
#pragma unroll 1
    for (uint32_t slice = 0; slice < slices; ++slice) {
      const uint32_t buffer = slice & 1U;
      const uint32_t k0 = slice * kSliceDepth;
      const bool more = slice + 1 < slices;
      if (more) {  // in flight while this slice is multiplied
        const uint32_t k = k0 + kSliceDepth + load_k;
        us_next = load_four(us, height, k, rank, row0 + load_element, height, us_aligned);
        v_next = load_four(v, width, k, rank, col0 + load_element, width, v_aligned);
      }
      const UsSlice& us_slice = us_slices[buffer];
      const VSlice& v_slice = v_slices[buffer];
      const uint32_t depth = min(kSliceDepth, rank - k0);
      if (depth == kSliceDepth) {
#pragma unroll
        for (uint32_t kk = 0; kk < kSliceDepth; ++kk) {
          accumulate_k(us_slice, v_slice, kk, patch_row, patch_col, acc);
        }
      } else {
#pragma unroll 1
        for (uint32_t kk = 0; kk < depth; ++kk) {
          accumulate_k(us_slice, v_slice, kk, patch_row, patch_col, acc);
        }
      }
      if (more) {
        *reinterpret_cast<float4*>(&us_slices[buffer ^ 1U][load_k][load_element]) = us_next;
        *reinterpret_cast<float4*>(&v_slices[buffer ^ 1U][load_k][load_element]) = v_next;
      }
      __syncthreads();
    }

    // Rows and columns past the image edge land in the staging tile too (it is always whole);
    // the copy-out never reads them.
#pragma unroll
    for (uint32_t r = 0; r < kPatchRows; ++r) {
#pragma unroll
      for (uint32_t c = 0; c < kPatchCols; ++c) {
        const uint32_t offset =
            stage_row[r] + ((patch_col + c) * kChannels + channel) * sizeof(Pixel);
        *reinterpret_cast<Pixel*>(staging + offset) = detail::to_pixel<Pixel>(acc[r][c]);
      }
    }
  }
  __syncthreads();
  detail::copy_out_tile<Pixel, kChannels, kPitch, kThreads>(staging, tile_out, row_bytes,
                                                            tile_rows, tile_cols, threadIdx.x);
}

template <uint32_t kChannels>
void launch(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
            StreamView stream) {
  constexpr std::size_t kSharedBytes = shared_bytes<kChannels>();
  const auto kernel = fused_reconstruct_tile64_kernel<kChannels>;
  if constexpr (kSharedBytes > kSharedBytesWithoutOptIn) {
    // Per device and cheap; set on every launch rather than cached per process.
    SVDSERVE_CUDA_CHECK(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSharedBytes)));
  }
  const dim3 grid((shape.width + kTileCols - 1) / kTileCols,
                  (shape.height + kTileRows - 1) / kTileRows, count);
  kernel<<<grid, kThreads, kSharedBytes, stream.value()>>>(tasks_device, shape.height,
                                                           shape.width);
  SVDSERVE_CUDA_CHECK_LAUNCH();
}

}  // namespace

namespace variants {

bool Tile64::can_implement(const ReconstructLaunch& launch) noexcept {
  return launch.pixels == OutputPixels::f32;
}

uint32_t Tile64::tile_rows() noexcept { return kTileRows; }

// Outputs must be float-aligned (device allocations are).
void Tile64::run(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
                 const ReconstructLaunch& /*launch*/, StreamView stream) {
  dispatch_channels(shape.channels, [&](auto channels) {
    launch<decltype(channels)::value>(tasks_device, count, shape, stream);
  });
}

}  // namespace variants
}  // namespace svdserve::gpu
