// The wgmma variant's loop alone (wgmma_loop_alone.hpp).

#include "bench/wgmma_loop_alone.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/gpu/reconstruct/bulk_load.cuh"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/reconstruct/named_barrier.cuh"
#include "kernels/gpu/reconstruct/policy.hpp"
#include "kernels/gpu/reconstruct/tile_io.cuh"
#include "kernels/gpu/reconstruct/ring_position.cuh"
#include "kernels/gpu/reconstruct/wgmma_ptx.cuh"
#include "kernels/gpu/reconstruct/wgmma_operands.hpp"
#include "bench/bench_random.cuh"
#include "bench/clocked_run.cuh"

namespace svdserve::bench {
namespace {

using gpu::detail::kWarpgroupThreads;

constexpr uint32_t kConsumers = 2;
constexpr uint32_t kThreads = kConsumers * kWarpgroupThreads + 32;  // and the producer warp
// A stage as the kernel's stacked pair: three blocks in the operands' layout (upper US, lower US,
// V), each a k-step of a 128-row tile: k 0-7 then k 8-15, each half the big part's core matrices,
// then the small part's.
using Layout = gpu::WgmmaOperandLayout;
constexpr auto kBlockBytes = static_cast<uint32_t>(Layout::kStepBytes);
constexpr uint32_t kStageBytes = 3 * kBlockBytes;
constexpr uint32_t kStagingBytes = 128 * 128;  // a consumer's 128 x 128 bytes (not pitched)

template <uint32_t kStages>
constexpr std::size_t kSharedBytes = std::size_t{kStages} * kStageBytes +
                                     kConsumers * kStagingBytes;

#if SVDSERVE_HAS_WGMMA

using gpu::detail::RingPosition;
using gpu::detail::WgmmaAccumulators;

constexpr auto kPartBytes = static_cast<uint32_t>(Layout::kPartBytes);  // small after big
constexpr auto kHalfStepBytes = static_cast<uint32_t>(Layout::kHalfStepBytes);
// The second 64 rows of a part: 8 row groups of one core matrix further.
constexpr uint32_t kSecondRowsBytes = gpu::detail::kWgmmaRows / 8 * gpu::detail::kCoreMatrixBytes;
// The kernel's stagger: consumer 1 starts once consumer 0 has issued this many steps (named
// barrier kStaggerBarrier; wgmma.cu, stagger_steps() + 1 with 5 stages).
constexpr uint32_t kLeadSteps = 3;
constexpr uint32_t kStaggerBarrier = 1;

__device__ __forceinline__ void wait_for_the_leader() {
  gpu::detail::sync_named_barrier<kConsumers * kWarpgroupThreads>(kStaggerBarrier);
}

__device__ __forceinline__ void release_the_follower() {
  gpu::detail::arrive_named_barrier<kConsumers * kWarpgroupThreads>(kStaggerBarrier);
}

// The descriptors of the ring's first stage (the kernel's StageOperands): k 8-15 a half step
// further, the next 8 rows a core matrix further.
struct StageOperands {
  uint64_t big;
  uint64_t small;

  __device__ __forceinline__ explicit StageOperands(const unsigned char* stages)
      : big(gpu::detail::wgmma_descriptor(stages, kHalfStepBytes, gpu::detail::kCoreMatrixBytes)),
        small(gpu::detail::wgmma_descriptor(stages + kPartBytes, kHalfStepBytes,
                                            gpu::detail::kCoreMatrixBytes)) {}

  // One consumer's six wgmmas of a step, in the kernel's order: the three products on its upper
  // 64 rows, then on its lower 64 (descriptor fields count 16 bytes).
  __device__ __forceinline__ void multiply(uint32_t stage, uint32_t consumer, bool accumulate,
                                           WgmmaAccumulators& top,
                                           WgmmaAccumulators& bottom) const {
    const uint64_t us = (stage * kStageBytes + consumer * kBlockBytes) >> 4;
    const uint64_t v = (stage * kStageBytes + 2 * kBlockBytes) >> 4;
    constexpr uint64_t kBottom = kSecondRowsBytes >> 4;
    gpu::detail::fence_wgmma_operands();
    gpu::detail::wgmma_f16(top, small + us, big + v, accumulate);
    gpu::detail::wgmma_f16(top, big + us, small + v, true);
    gpu::detail::wgmma_f16(top, big + us, big + v, true);
    gpu::detail::wgmma_f16(bottom, small + us + kBottom, big + v, accumulate);
    gpu::detail::wgmma_f16(bottom, big + us + kBottom, small + v, true);
    gpu::detail::wgmma_f16(bottom, big + us + kBottom, big + v, true);
    gpu::detail::commit_wgmma_group();
  }
};

// The kernel's rounding of a set of accumulators into bytes of the staging tile.
__device__ __forceinline__ void round_into(const WgmmaAccumulators& d, unsigned char* staging,
                                           uint32_t thread) {
#pragma unroll
  for (uint32_t i = 0; i < gpu::detail::kWgmmaAccumulators; ++i) {
    staging[i * kWarpgroupThreads + thread] =
        static_cast<unsigned char>(gpu::detail::round_to_u8_bits(d[i]));
  }
}

#endif

template <uint32_t kStages, bool kRounds>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_loop_kernel(float* __restrict__ out, uint32_t steps, uint32_t channel_steps,
                      ClockSample* clock) {
#if SVDSERVE_HAS_WGMMA
  extern __shared__ __align__(128) unsigned char shared[];
  __shared__ uint64_t full[kStages];
  __shared__ uint64_t empty[kStages];
  const auto words = static_cast<uint32_t>(kStages * kStageBytes / 4);
  for (uint32_t i = threadIdx.x; i < words; i += blockDim.x) {
    // Different in every stage and block.
    reinterpret_cast<uint32_t*>(shared)[i] =
        random_f16_pair(uint64_t{blockIdx.x} * words + i, /*seed=*/2024);
  }
  if (threadIdx.x == 0) {
    for (uint32_t s = 0; s < kStages; ++s) {
      gpu::detail::init_barrier(&full[s], 1);
      gpu::detail::init_barrier(&empty[s], kConsumers);
    }
    gpu::detail::fence_barrier_init();
  }
  gpu::detail::fence_shared_for_wgmma();
  __syncthreads();
  sample_clock(clock, 0);
  const uint32_t consumer = threadIdx.x / kWarpgroupThreads;
  const uint32_t thread = threadIdx.x % kWarpgroupThreads;
  if (consumer == kConsumers) {  // the producer: hands out every stage again once it is free
    if (thread == 0) {
      RingPosition<kStages> position;
      for (uint32_t s = 0; s < steps; ++s, position.advance()) {
        gpu::detail::wait_barrier(&empty[position.stage], position.parity ^ 1U);
        gpu::detail::arrive(&full[position.stage]);
      }
    }
    return;
  }
  const StageOperands operands(shared);
  unsigned char* const staging = shared + kStages * kStageBytes + consumer * kStagingBytes;
  WgmmaAccumulators top = {};  // defined before the first wgmma reads them (scale-d 0)
  WgmmaAccumulators bottom = {};
  if (consumer == 1) wait_for_the_leader();
  bool follower_released = consumer == 1;
  uint32_t step = 0;
  RingPosition<kStages> position;
  uint32_t previous_stage = 0;
  while (step < steps) {
    const uint32_t channel_start = step;
    const uint32_t channel_end = min(steps, step + channel_steps);
#pragma unroll 1
    for (; step < channel_end; ++step, position.advance()) {
      const bool accumulate = step != channel_start;
      const uint32_t stage = position.stage;
      gpu::detail::wait_barrier(&full[stage], position.parity);
      operands.multiply(stage, consumer, accumulate, top, bottom);
      if (!follower_released && step + 1 == kLeadSteps) {
        release_the_follower();
        follower_released = true;
      }
      if (accumulate) {
        gpu::detail::wait_wgmma<1>();  // the previous step's wgmmas: its stage is free
        if (thread == 0) gpu::detail::arrive(&empty[previous_stage]);
      }
      previous_stage = stage;
    }
    gpu::detail::wait_wgmma<0>();
    if (thread == 0) gpu::detail::arrive(&empty[previous_stage]);
    if constexpr (kRounds) {
      gpu::detail::pin_accumulators(top);
      gpu::detail::pin_accumulators(bottom);
      round_into(top, staging, thread);
      round_into(bottom, staging + kStagingBytes / 2, thread);
    }
  }
  if (!follower_released) release_the_follower();  // fewer steps than the lead
  sample_clock(clock, 1);
  float sum = 0.0F;
#pragma unroll
  for (uint32_t i = 0; i < gpu::detail::kWgmmaAccumulators; ++i) sum += top[i] + bottom[i];
  out[std::size_t{blockIdx.x} * blockDim.x + threadIdx.x] = sum;  // keeps the wgmmas alive
#else
  (void)out;
  (void)steps;
  (void)channel_steps;
  (void)clock;
#endif
}

template <uint32_t kStages, bool kRounds = true>
WgmmaLoop measure(gpu::StreamView stream, int sms, uint32_t channel_steps) {
  constexpr uint32_t kSteps = 1U << 14;  // ~10 ms on an H100
  const auto blocks = static_cast<uint32_t>(sms);
  SVDSERVE_CUDA_CHECK(cudaFuncSetAttribute(wgmma_loop_kernel<kStages, kRounds>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(kSharedBytes<kStages>)));
  gpu::DeviceBuffer out(std::size_t{blocks} * kThreads * sizeof(float));
  gpu::DeviceBuffer clock(sizeof(ClockSample));
  constexpr double kWgmmasPerStep = 6;
  const double flops = kWgmmasPerStep * gpu::detail::kWgmmaF16Flops * kSteps * kConsumers * blocks;
  const Peak peak = fastest_run(stream, flops, clock.as<ClockSample>(), [&] {
    wgmma_loop_kernel<kStages, kRounds>
        <<<blocks, kThreads, kSharedBytes<kStages>, stream.value()>>>(
            out.as<float>(), kSteps, channel_steps, clock.as<ClockSample>());
  });
  return {kStages, channel_steps, kRounds, peak};
}

}  // namespace

std::vector<WgmmaLoop> measure_wgmma_loops_alone(gpu::StreamView stream, int sms) {
  if (!gpu::fused_wgmma_supported()) return {};
  constexpr uint32_t kKernelStages = 5;  // the kernel's ring with 3 channels
  constexpr uint32_t kDeepStages = 8;
  constexpr uint32_t kSteps256 = 16;  // a channel at k = 256
  constexpr uint32_t kSteps64 = 4;
  return {measure<kKernelStages>(stream, sms, kSteps256),
          measure<kKernelStages>(stream, sms, kSteps64),
          measure<kDeepStages>(stream, sms, kSteps256),
          measure<kKernelStages, /*kRounds=*/false>(stream, sms, kSteps64)};
}

}  // namespace svdserve::bench
