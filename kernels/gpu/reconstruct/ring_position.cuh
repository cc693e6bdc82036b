#pragma once
// Where the next step is in a ring of kStages shared-memory stages (the wgmma kernel's, and the
// kernel benchmark's loop alone): the stage it uses and the parity of that stage's barrier phase,
// counted step by step rather than computed as step % kStages and step / kStages % 2.
// Why: with 3 channels the kernel's ring has 5 stages, and the division by 5 sat between a step's
// barrier wait and its wgmmas. The kernel with counters: 1.03-1.06x at k = 256, 1.01-1.04x at
// k = 64 (H100).

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
