// Fused rank-k reconstruction: out = pixel(US_k V_k^T), computed tile by tile and written straight
// into the interleaved (HWC) output; no f32 image ever reaches device memory.
//
// One block = one 64 x 64 pixel tile of one task (blockIdx.z), all channels:
//  - 256 threads in a 16 x 16 grid, each accumulating a 4 x 4 patch in registers (FP32 FMA),
//    one channel at a time so the 16 accumulators are reused;
//  - k advances in slices of 16. A slice of US (64 rows) and of V (64 columns) sits in shared
//    memory, double-buffered: the next slice is loaded into registers (float4 where aligned)
//    while the current one is multiplied, so there is one __syncthreads per slice;
//  - each channel's pixels go into a shared staging tile that is laid out like the output rows
//    (interleaved) and shifted, row by row, by the row's global address mod 16. Staging and
//    output are then congruent mod 16, so the copy-out stores 16 bytes (uint4, STG.128) wherever
//    an aligned 16 bytes lies inside the row segment, and narrower stores only at its two ends.
//    That holds for any width, channel count and output address.
// Summation order per output is k = 0, 1, ..., rank - 1, one FMA each; cuBLAS sums in another
// order, so the two paths can differ in the last bits (and a u8 pixel by 1 at a .5 boundary).

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/errors.hpp"
#include "kernels/gpu/cuda_check.hpp"
#include "kernels/gpu/pixel_convert.cuh"
#include "kernels/gpu/reconstruct.hpp"

namespace svdserve::gpu {
namespace {

constexpr uint32_t kTileRows = 64;     // image rows (i) per block
constexpr uint32_t kTileCols = 64;     // image columns (j) per block
constexpr uint32_t kSliceDepth = 16;   // k per shared-memory slice
constexpr uint32_t kPatchRows = 4;     // outputs per thread, per channel: 4 x 4
constexpr uint32_t kPatchCols = 4;
constexpr uint32_t kThreadsPerTileRow = kTileCols / kPatchCols;
constexpr uint32_t kThreads = (kTileRows / kPatchRows) * kThreadsPerTileRow;
constexpr uint32_t kVectorFloats = 4;  // float4 loads of the factors
constexpr uint32_t kStoreBytes = 16;   // uint4 stores of the output
constexpr uint32_t kMaxChannels = 4;   // the service accepts 1, 3 and 4
constexpr uint32_t kMaxGridYZ = 65535;
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

// Staging row pitch: one tile row of interleaved pixels plus room for the 0..15 byte shift.
template <typename Pixel, uint32_t kChannels>
constexpr uint32_t staging_pitch() {
  return kTileCols * kChannels * sizeof(Pixel) + kStoreBytes;
}

template <typename Pixel, uint32_t kChannels>
constexpr std::size_t shared_bytes() {
  return kStagingOffset + std::size_t{kTileRows} * staging_pitch<Pixel, kChannels>();
}

using UsSlice = float[kSliceDepth][kTileRows];
using VSlice = float[kSliceDepth][kTileCols];
using Patch = float[kPatchRows][kPatchCols];

__device__ __forceinline__ uint32_t misalignment(std::uintptr_t address) {
  return static_cast<uint32_t>(address % kStoreBytes);
}

__device__ __forceinline__ bool vector_aligned(const float* column0, uint32_t leading) {
  return misalignment(reinterpret_cast<std::uintptr_t>(column0)) == 0 &&
         leading % kVectorFloats == 0;
}

// Elements first..first+3 of factor column k (leading dimension `leading`), zero past the image
// edge (`limit`) and for k >= rank, which keeps reads inside the factors.
__device__ __forceinline__ float4 load_four(const float* __restrict__ factor, uint32_t leading,
                                            uint32_t k, uint32_t rank, uint32_t first,
                                            uint32_t limit, bool aligned) {
  float4 four = make_float4(0.0F, 0.0F, 0.0F, 0.0F);
  if (k >= rank) return four;
  const float* column = factor + std::size_t{k} * leading;
  if (aligned && first + 3 < limit) return __ldg(reinterpret_cast<const float4*>(column + first));
  if (first < limit) four.x = __ldg(column + first);
  if (first + 1 < limit) four.y = __ldg(column + first + 1);
  if (first + 2 < limit) four.z = __ldg(column + first + 2);
  if (first + 3 < limit) four.w = __ldg(column + first + 3);
  return four;
}

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

// Output stores go through __stwb (st.global.wb, the default caching): task.out is loaded from
// memory, so without it the compiler cannot prove the address global and emits generic stores.

// The ends of a row segment, narrower than 16 bytes: 4-byte words for f32 (its output is
// float-aligned, so both ends are word-aligned), single bytes for u8.
template <typename Pixel>
__device__ __forceinline__ void copy_narrow(unsigned char* out, const unsigned char* stage,
                                            uint32_t first, uint32_t last) {
  constexpr uint32_t kStep = sizeof(Pixel);
  using Word = std::conditional_t<sizeof(Pixel) == 4, uint32_t, uint8_t>;
  for (uint32_t b = first; b < last; b += kStep) {
    __stwb(reinterpret_cast<Word*>(out + b), *reinterpret_cast<const Word*>(stage + b));
  }
}

template <typename Pixel, uint32_t kChannels>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    fused_reconstruct_kernel(const ReconstructTask* __restrict__ tasks, uint32_t height,
                             uint32_t width) {
  constexpr uint32_t kPixelBytes = kChannels * sizeof(Pixel);
  constexpr uint32_t kPitch = staging_pitch<Pixel, kChannels>();
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
        const uint32_t offset = stage_row[r] + ((patch_col + c) * kChannels + channel) * sizeof(Pixel);
        *reinterpret_cast<Pixel*>(staging + offset) = detail::to_pixel<Pixel>(acc[r][c]);
      }
    }
  }
  __syncthreads();

  // Copy-out: work item = one aligned 16-byte chunk of one row segment; consecutive threads take
  // consecutive chunks, so a warp writes contiguous memory.
  const uint32_t segment_bytes = tile_cols * kPixelBytes;
  const uint32_t chunks_per_row = (segment_bytes + 2 * kStoreBytes - 2) / kStoreBytes;
  const uint32_t chunks = tile_rows * chunks_per_row;
  for (uint32_t item = threadIdx.x; item < chunks; item += kThreads) {
    const uint32_t row = item / chunks_per_row;
    const uint32_t chunk = item - row * chunks_per_row;
    unsigned char* const row_out = tile_out + row * row_bytes;
    const uint32_t shift = misalignment(reinterpret_cast<std::uintptr_t>(row_out));
    const unsigned char* const row_stage = staging + row * kPitch + shift;
    // Segment bytes [begin, begin + 16) form one aligned 16 bytes of the output.
    const int begin = static_cast<int>(chunk * kStoreBytes) - static_cast<int>(shift);
    const int end = begin + static_cast<int>(kStoreBytes);
    const int first = max(begin, 0);
    const int last = min(end, static_cast<int>(segment_bytes));
    if (first >= last) continue;
    if (first == begin && last == end) {
      __stwb(reinterpret_cast<uint4*>(row_out + begin),
             *reinterpret_cast<const uint4*>(row_stage + begin));
    } else {
      copy_narrow<Pixel>(row_out, row_stage, static_cast<uint32_t>(first),
                         static_cast<uint32_t>(last));
    }
  }
}

template <typename Pixel, uint32_t kChannels>
void launch(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
            StreamView stream) {
  constexpr std::size_t kSharedBytes = shared_bytes<Pixel, kChannels>();
  const auto kernel = fused_reconstruct_kernel<Pixel, kChannels>;
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

template <typename Pixel>
void launch_for_channels(const ReconstructTask* tasks_device, uint32_t count,
                         const ImageShape& shape, StreamView stream) {
  switch (shape.channels) {
    case 1: return launch<Pixel, 1>(tasks_device, count, shape, stream);
    case 2: return launch<Pixel, 2>(tasks_device, count, shape, stream);
    case 3: return launch<Pixel, 3>(tasks_device, count, shape, stream);
    case 4: return launch<Pixel, 4>(tasks_device, count, shape, stream);
    default: break;
  }
  throw InvalidArgument("fused reconstruction supports 1 to " + std::to_string(kMaxChannels) +
                        " channels, not " + std::to_string(shape.channels));
}

}  // namespace

// max_rank needs no special handling: k streams through fixed 16-deep slices whatever the rank.
// u8 outputs may start at any byte; f32 outputs must be float-aligned (device allocations are).
void launch_fused_reconstruct(const ReconstructTask* tasks_device, uint32_t count,
                              const ImageShape& shape, OutputPixels pixels,
                              [[maybe_unused]] uint32_t max_rank, StreamView stream) {
  if (count == 0 || shape.width == 0 || shape.height == 0) return;
  const uint32_t row_tiles = (shape.height + kTileRows - 1) / kTileRows;
  if (count > kMaxGridYZ || row_tiles > kMaxGridYZ) {
    throw InvalidArgument("fused reconstruction: " + std::to_string(count) + " tasks of height " +
                          std::to_string(shape.height) + " exceed one launch's grid");
  }
  if (pixels == OutputPixels::u8) {
    launch_for_channels<uint8_t>(tasks_device, count, shape, stream);
  } else {
    launch_for_channels<float>(tasks_device, count, shape, stream);
  }
}

}  // namespace svdserve::gpu
