#pragma once
// The one float -> output pixel rule of the GPU reconstruction (the fused kernels, and the cuBLAS
// oracle of the tests and benchmarks).
// u8 uses svdserve::round_to_u8 itself (constexpr, callable here through
// --expt-relaxed-constexpr): clamp to 0..255, then round half up, NaN -> 0. That is the CPU
// backend's rule, so GPU and CPU pixels agree bit for bit given the same float; deliberately
// not __float2int_rn (round half to even), which would differ from the CPU at exact .5 values.

#include <cstdint>

#include "kernels/pixel_rounding.hpp"

namespace svdserve::gpu::detail {

template <typename Pixel>
__device__ __forceinline__ Pixel to_pixel(float value);

template <>
__device__ __forceinline__ uint8_t to_pixel<uint8_t>(float value) {
  return round_to_u8(value);
}

template <>
__device__ __forceinline__ float to_pixel<float>(float value) {
  return value;  // unclamped
}

}  // namespace svdserve::gpu::detail
