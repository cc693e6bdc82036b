#pragma once
// What the 128 x 128 tile kernels (tile128, tensor; wgmma uses OutputTile, channel_factors and
// launch_tiles) share besides the staging and copy-out of tile_io.cuh: the k loop
// that streams the factors through shared memory in slices, and the launch. A slice, for one
// channel and k0, is the block's 128 rows of US and 128 columns of V at k = k0 .. k0 + depth - 1,
// laid out slice[k - k0][row or column] with a row pitch the kernel chooses (the tensor kernel
// pads it against bank conflicts).
//
// A slice is loaded into registers while the previous one is multiplied, then stored to the other
// shared buffer: SliceLoad is one thread's share of it in flight. (cp.async straight into shared
// memory was measured for the tensor kernel: within 2 %, not worth a second path.)

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/gpu/reconstruct/bulk_store.cuh"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/reconstruct/fused.hpp"
#include "kernels/gpu/reconstruct/tile_io.cuh"
#include "kernels/image.hpp"

namespace svdserve::gpu::detail {

// One channel's factors as a block reads them.
struct ChannelFactors {
  const float* us;
  const float* v;
  bool us_aligned;
  bool v_aligned;
};

[[nodiscard]] __device__ __forceinline__ ChannelFactors channel_factors(const ReconstructTask& task,
                                                          uint32_t channel, uint32_t height,
                                                          uint32_t width) {
  const float* us = task.us + std::size_t{channel} * height * task.rank_kept;
  const float* v = task.v + std::size_t{channel} * width * task.rank_kept;
  return {us, v, vector_aligned(us, height), vector_aligned(v, width)};
}

// Each thread loads kLoadsPerThread float4 of US and as many of V per slice, the k rows
// kLoadRowStride apart; past the image edge and for k >= rank the values are zero (load_four).
template <uint32_t kTile, uint32_t kDepth, uint32_t kThreads>
struct SliceLoad {
  static constexpr uint32_t kLoadsPerThread = kDepth * kTile / (kVectorFloats * kThreads);
  static_assert(kLoadsPerThread * kVectorFloats * kThreads == kDepth * kTile);
  static constexpr uint32_t kLoadersPerRow = kTile / kVectorFloats;
  static constexpr uint32_t kLoadRowStride = kThreads / kLoadersPerRow;

  float4 us[kLoadsPerThread];
  float4 v[kLoadsPerThread];

  __device__ __forceinline__ void load(const ChannelFactors& f, uint32_t k0, uint32_t rank,
                                       uint32_t row0, uint32_t col0, uint32_t height,
                                       uint32_t width) {
    const uint32_t first_k = threadIdx.x / kLoadersPerRow;
    const uint32_t element = threadIdx.x % kLoadersPerRow * kVectorFloats;
#pragma unroll
    for (uint32_t i = 0; i < kLoadsPerThread; ++i) {
      const uint32_t k = k0 + first_k + i * kLoadRowStride;
      us[i] = load_four(f.us, height, k, rank, row0 + element, height, f.us_aligned);
      v[i] = load_four(f.v, width, k, rank, col0 + element, width, f.v_aligned);
    }
  }

  // Where piece i goes in a slice of kDepth rows of kPitch floats (kPitch a multiple of 4).
  template <uint32_t kPitch>
  [[nodiscard]] __device__ __forceinline__ static uint32_t offset(uint32_t i) {
    static_assert(kPitch % kVectorFloats == 0);
    return (threadIdx.x / kLoadersPerRow + i * kLoadRowStride) * kPitch +
           threadIdx.x % kLoadersPerRow * kVectorFloats;
  }

  template <uint32_t kPitch>
  __device__ __forceinline__ void store(float* us_slice, float* v_slice) const {
#pragma unroll
    for (uint32_t i = 0; i < kLoadsPerThread; ++i) {
      *reinterpret_cast<float4*>(us_slice + offset<kPitch>(i)) = us[i];
      *reinterpret_cast<float4*>(v_slice + offset<kPitch>(i)) = v[i];
    }
  }
};

// The block's tile of the HWC u8 output (rows row0.., columns col0.. of task blockIdx.z) and its
// staging tile (tile_io.cuh's contract), each staging row kPitch bytes.
template <uint32_t kTile, uint32_t kThreads, uint32_t kChannels, uint32_t kPitch>
struct OutputTile {
  static constexpr uint32_t kChannelCount = kChannels;

  uint32_t row0;
  uint32_t col0;
  std::size_t row_bytes;
  unsigned char* out;

  // The tile (blockIdx.y, blockIdx.x), or (tile_row, tile_col) in a kernel whose blocks loop
  // over tiles.
  __device__ __forceinline__ OutputTile(const ReconstructTask& task, uint32_t width)
      : OutputTile(task, width, blockIdx.y, blockIdx.x) {}
  __device__ __forceinline__ OutputTile(const ReconstructTask& task, uint32_t width,
                                        uint32_t tile_row, uint32_t tile_col)
      : row0(tile_row * kTile),
        col0(tile_col * kTile),
        row_bytes(std::size_t{width} * kChannels),
        out(static_cast<unsigned char*>(task.out) + row0 * row_bytes +
            std::size_t{col0} * kChannels) {}

  // Where channel `channel` of the first pixel of tile row `row` is staged.
  [[nodiscard]] __device__ __forceinline__ unsigned char* staged(unsigned char* staging,
                                                                 uint32_t row,
                                                                 uint32_t channel) const {
    return staging + row * kPitch +
           misalignment(reinterpret_cast<std::uintptr_t>(out) + row * row_bytes) + channel;
  }

  // After the staging is complete (the caller synchronises): its part inside the image, out.
  // On sm_90, when every row segment is whole 16-byte chunks at aligned addresses (any image
  // whose row is a multiple of 16 bytes, at an aligned output; tiles at the right edge too when
  // their width is), one thread per row hands it to the copy engine (bulk_store.cuh).
  __device__ __forceinline__ void copy_out(const unsigned char* staging, uint32_t height,
                                           uint32_t width) const {
    const uint32_t tile_rows = min(kTile, height - row0);
    const uint32_t tile_cols = min(kTile, width - col0);
#if SVDSERVE_HAS_BULK_STORE
    if (bulk_storable(tile_cols)) {
      fence_shared_for_bulk_copy();
      __syncthreads();
      if (threadIdx.x < tile_rows) {
        bulk_store_row(staging, threadIdx.x, tile_cols);
        wait_bulk_reads();  // before the staging is reused, or the block's memory goes
      }
      return;
    }
#endif
    copy_out_tile<uint8_t, kChannels, kPitch, kThreads>(staging, out, row_bytes, tile_rows,
                                                        tile_cols, threadIdx.x);
  }

  // copy_out for a tile of its own in a group of kThreads threads (a warpgroup) of which this is
  // `thread`, synchronised by sync() alone, and without waiting for the copy engine: the caller
  // waits for its reads (wait_bulk_reads, then sync()) before it writes the staging again, and
  // before the block exits. The threads' copy has finished when sync() returns after it.
  template <typename Sync>
  __device__ __forceinline__ void copy_out_async(const unsigned char* staging, uint32_t height,
                                                 uint32_t width, uint32_t thread,
                                                 Sync&& sync) const {
    const uint32_t tile_rows = min(kTile, height - row0);
    const uint32_t tile_cols = min(kTile, width - col0);
#if SVDSERVE_HAS_BULK_STORE
    if (bulk_storable(tile_cols)) {
      fence_shared_for_bulk_copy();
      sync();
      if (thread < tile_rows) bulk_store_row(staging, thread, tile_cols);
      return;
    }
#endif
    sync();
    copy_out_tile<uint8_t, kChannels, kPitch, kThreads>(staging, out, row_bytes, tile_rows,
                                                        tile_cols, thread);
  }

 private:
#if SVDSERVE_HAS_BULK_STORE
  // Whether the copy engine can take the tile: every row segment whole 16-byte chunks at
  // aligned addresses.
  [[nodiscard]] __device__ __forceinline__ bool bulk_storable(uint32_t tile_cols) const {
    return misalignment(reinterpret_cast<std::uintptr_t>(out)) == 0 &&
           row_bytes % kBulkAlignment == 0 && tile_cols * kChannels % kBulkAlignment == 0;
  }

  // Tile row `row`'s segment to the copy engine, after the fence and the threads' barrier.
  __device__ __forceinline__ void bulk_store_row(const unsigned char* staging, uint32_t row,
                                                 uint32_t tile_cols) const {
    static_assert(kPitch % kBulkAlignment == 0 && kThreads >= kTile);
    bulk_store(out + row * row_bytes, staging + row * kPitch, tile_cols * kChannels);
    commit_bulk_group();
  }
#endif
};

// The k loop of a tile kernel: every channel's slices in turn (at least one per channel, so that
// rank 0 gives zeros), double-buffered in us_slices / v_slices (two slices of kDepth x kPitch
// floats each), the next slice, of this channel or the next, loading while this one is
// multiplied, one __syncthreads per slice:
//  - multiply(us_slice, v_slice, depth): depth = the slice's k rows inside the rank (kDepth but
//    in the last slice; the rows after it hold zeros);
//  - finish_channel(channel): after the channel's last slice, before the barrier (the kernels
//    round their accumulators into the staging tile there).
template <uint32_t kTile, uint32_t kDepth, uint32_t kThreads, uint32_t kPitch, uint32_t kChannels,
          typename Multiply, typename FinishChannel>
__device__ __forceinline__ void stream_slices(const ReconstructTask& task, uint32_t row0,
                                              uint32_t col0, uint32_t height, uint32_t width,
                                              float* us_slices, float* v_slices,
                                              Multiply&& multiply,
                                              FinishChannel&& finish_channel) {
  constexpr uint32_t kSliceFloats = kDepth * kPitch;
  const uint32_t rank = task.rank;
  const uint32_t slices = max(1U, (rank + kDepth - 1) / kDepth);
  const uint32_t steps = kChannels * slices;

  ChannelFactors next = channel_factors(task, 0, height, width);
  SliceLoad<kTile, kDepth, kThreads> in_flight;
  in_flight.load(next, 0, rank, row0, col0, height, width);
  in_flight.template store<kPitch>(us_slices, v_slices);
  __syncthreads();

  uint32_t channel = 0;
  uint32_t slice = 0;
  uint32_t next_channel = 0;
  uint32_t next_slice = 0;
#pragma unroll 1
  for (uint32_t step = 0; step < steps; ++step) {
    const uint32_t buffer = (step & 1U) * kSliceFloats;
    const bool more = step + 1 < steps;
    if (more) {  // in flight while this slice is multiplied
      if (++next_slice == slices) {
        next_slice = 0;
        ++next_channel;
        next = channel_factors(task, next_channel, height, width);
      }
      in_flight.load(next, next_slice * kDepth, rank, row0, col0, height, width);
    }
    multiply(us_slices + buffer, v_slices + buffer, min(kDepth, rank - slice * kDepth));
    if (++slice == slices) {
      finish_channel(channel);
      slice = 0;
      ++channel;
    }
    if (more) {
      const uint32_t other = kSliceFloats - buffer;
      in_flight.template store<kPitch>(us_slices + other, v_slices + other);
    }
    __syncthreads();
  }
}

// Launches a tile kernel: one block per kTile x kTile tile of each task (blockIdx.z), opting in
// to more than 48 KiB of dynamic shared memory where it needs it (per device and cheap: set on
// every launch rather than cached per process).
template <uint32_t kTile, uint32_t kThreads>
void launch_tiles(void (*kernel)(const ReconstructTask*, uint32_t, uint32_t),
                  std::size_t shared_bytes, const ReconstructTask* tasks_device, uint32_t count,
                  const ImageShape& shape, StreamView stream) {
  constexpr std::size_t kSharedBytesWithoutOptIn = 48 * 1024;
  if (shared_bytes > kSharedBytesWithoutOptIn) {
    SVDSERVE_CUDA_CHECK(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)));
  }
  const dim3 grid((shape.width + kTile - 1) / kTile, (shape.height + kTile - 1) / kTile, count);
  kernel<<<grid, kThreads, shared_bytes, stream.value()>>>(tasks_device, shape.height,
                                                           shape.width);
  SVDSERVE_CUDA_CHECK_LAUNCH();
}

}  // namespace svdserve::gpu::detail
