#pragma once
// Deterministic pseudo-random values from an index, for filling benchmark inputs on the device:
// the same inputs in every run, without a generator's state.

#include <cstdint>

namespace svdserve::bench {

// Deterministic pseudo-random bits from an index (splitmix64).
__device__ __forceinline__ uint64_t splitmix64(uint64_t index, uint64_t seed) {
  uint64_t z = index * 0x9E3779B97F4A7C15ULL + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Deterministic pseudo-random floats in [0, 1) from an index.
__device__ __forceinline__ float unit_hash(uint64_t index, uint64_t seed) {
  return static_cast<float>(splitmix64(index, seed) >> 40) * (1.0F / 16777216.0F);
}

// Two FP16 values of 2^-10 with random signs and mantissas, packed in one word: operands whose
// bits toggle from value to value while every sum of their products stays finite (the wgmma
// peak's random operands and the wgmma variant's loop alone).
inline constexpr uint32_t kF16PairTwoToMinus10 = 0x14001400;
__device__ __forceinline__ uint32_t random_f16_pair(uint64_t index, uint64_t seed) {
  constexpr uint32_t kSignsAndMantissas = 0x83FF83FF;
  return (static_cast<uint32_t>(splitmix64(index, seed)) & kSignsAndMantissas) |
         kF16PairTwoToMinus10;
}

}  // namespace svdserve::bench
