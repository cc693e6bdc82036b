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

}  // namespace svdserve::bench
