#pragma once
// How a reconstructed value becomes a u8 pixel, in one place so every backend rounds alike:
// clamp to 0..255, then round half up (add 0.5, truncate). NaN becomes 0. Plain arithmetic, so
// a CUDA kernel can use the same rule and the compiler vectorises the CPU loop.

#include <cstdint>

namespace svdserve {

inline constexpr float kMaxU8Value = 255.0F;

[[nodiscard]] constexpr uint8_t round_to_u8(float value) noexcept {
  // Written so NaN fails both comparisons and lands on 0.
  const float clamped = value > 0.0F ? (value < kMaxU8Value ? value : kMaxU8Value) : 0.0F;
  return static_cast<uint8_t>(clamped + 0.5F);
}

}  // namespace svdserve
