#pragma once
// Where the next step is in a ring of kStages shared-memory stages (the wgmma kernel's, and the
// kernel benchmark's loop alone): the stage it uses and the parity of that stage's barrier phase,
// counted step by step rather than computed as step % kStages and step / kStages % 2.
// Why: with 3 channels the kernel's ring has 5 stages, and the division by 5 sat between a step's
// barrier wait and its wgmmas. The loop alone ran 0.92x as fast with it as with these counters
// (which come within 1-3 % of a ring of 4 or 8 stages, whose modulo is a mask); the kernel with
// them 1.03-1.06x at k = 256 and 1.01-1.04x at k = 64 (session 24, docs/performance-log.md).

#include <cstdint>

namespace svdserve::gpu::detail {

template <uint32_t kStages>
struct RingPosition {
  uint32_t stage = 0;
  uint32_t parity = 0;

  __device__ __forceinline__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      parity ^= 1U;
    }
  }
};

}  // namespace svdserve::gpu::detail
