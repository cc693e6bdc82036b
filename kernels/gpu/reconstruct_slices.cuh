#pragma once
// The k-slices of the factors that the 128 x 128 tile kernels (tile128, tensor) stream through
// shared memory: for one channel and k0, the block's 128 rows of US and 128 columns of V at
// k = k0 .. k0 + depth - 1, laid out slice[k - k0][row or column] with a row pitch the kernel
// chooses (the tensor kernel pads it against bank conflicts).
//
// A slice is loaded into registers while the previous one is multiplied, then stored to the other
// shared buffer: SliceLoad is one thread's share of it in flight. (cp.async straight into shared
// memory was measured for the tensor kernel: no faster, since its loads are a small share.)

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/gpu/reconstruct.hpp"
#include "kernels/gpu/reconstruct_tile_io.cuh"

namespace svdserve::gpu::detail {

// One channel's factors as a block reads them.
struct ChannelFactors {
  const float* us;
  const float* v;
  bool us_aligned;
  bool v_aligned;
};

__device__ __forceinline__ ChannelFactors channel_factors(const ReconstructTask& task,
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

}  // namespace svdserve::gpu::detail
