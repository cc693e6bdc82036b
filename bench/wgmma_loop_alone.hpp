#pragma once
// Not a floor: the wgmma variant's loop alone, to say how much of its distance to the MMA floor
// the loop's own structure accounts for.
//
// One block per SM of a producer warp and two consumer warpgroups, as in the kernel
// (kernels/gpu/reconstruct/wgmma.cu). Each consumer issues its six FP16 wgmmas a k-step (three
// products, two m64n128 accumulator sets, both operands from shared memory) from the next stage
// of a ring with the kernel's full/empty barriers, and hands a stage back once the next step's
// wgmmas are issued and the stage's are done. Every `channel_steps` steps (a channel: 16 at
// k = 256, 4 at k = 64) it drains its wgmmas and rounds its 128 accumulators into a staging tile
// with the kernel's rounding; consumer 1 starts three steps behind consumer 0, as in the kernel.
// Left out: the copies into the stages (they hold random FP16 values from the start, different
// in every stage), the stores and the tiles' tails. One run drains every 4 steps without
// rounding: against the run that rounds, it shows what the rounding costs the tensor cores
// (H100: the drain alone costs nothing; the rounding, issued beside the other consumer's wgmmas,
// about a fifth of the time at k = 64).

#include <cstdint>
#include <vector>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "bench/peak.hpp"

namespace svdserve::bench {

struct WgmmaLoop {
  uint32_t stages = 0;         // the ring's depth (the kernel's with 3 channels: 5)
  uint32_t channel_steps = 0;  // k-steps between roundings (or drains)
  bool rounds = true;          // false: drains every channel_steps, rounds nothing
  Peak peak;                   // FLOPs of the wgmmas only
};

// The kernel's ring at k = 256 and k = 64, at k = 256 with 8 stages (more than fit beside the
// kernel's staging tiles with 3 channels), and at k = 64 without the rounding. Empty where the
// device has no wgmma.
[[nodiscard]] std::vector<WgmmaLoop> measure_wgmma_loops_alone(gpu::StreamView stream, int sms);

}  // namespace svdserve::bench
