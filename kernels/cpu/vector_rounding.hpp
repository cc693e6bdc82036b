#pragma once
// round_to_u8 (kernels/pixel_rounding.hpp) on whole vectors: the same compare, select, add and
// truncation per lane, written with GCC vector types because GCC leaves the scalar rule's nested
// select as a branch (unvectorised) for AVX2 and SSE2. One source compiles to SSE2, AVX2 or
// AVX-512 under the caller's target attribute; it is always_inline, so no vector crosses a call
// (whose ABI would depend on the target). Internal to kernels/cpu/reconstruct.cpp.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/pixel_rounding.hpp"

namespace svdserve::cpu_vector {

// Typedefs, not alias-declarations: GCC drops a dependent vector_size on `using`.
template <unsigned VectorBytes>
struct Vectors {
  static constexpr unsigned kLanes = VectorBytes / sizeof(float);
  typedef float f32 __attribute__((vector_size(VectorBytes)));
  typedef int32_t i32 __attribute__((vector_size(VectorBytes)));
  typedef uint8_t u8 __attribute__((vector_size(kLanes)));
  static_assert(sizeof(f32) == VectorBytes && sizeof(i32) == VectorBytes && sizeof(u8) == kLanes);
};

// `count` is a whole number of vectors.
template <unsigned VectorBytes>
[[gnu::always_inline]] inline void round_to_u8(const float* __restrict values, std::size_t count,
                                               uint8_t* __restrict rounded) noexcept {
  using V = Vectors<VectorBytes>;
  const typename V::f32 zero = typename V::f32{} + 0.0F;
  const typename V::f32 max_value = typename V::f32{} + kMaxU8Value;
  for (std::size_t i = 0; i < count; i += V::kLanes) {
    typename V::f32 value;
    std::memcpy(&value, values + i, sizeof(value));
    // NaN fails the first comparison and lands on 0, as in the scalar rule.
    typename V::f32 clamped = value > zero ? value : zero;
    clamped = clamped < max_value ? clamped : max_value;
    const auto truncated = __builtin_convertvector(clamped + 0.5F, typename V::i32);
    const auto bytes = __builtin_convertvector(truncated, typename V::u8);
    std::memcpy(rounded + i, &bytes, sizeof(bytes));
  }
}

}  // namespace svdserve::cpu_vector
