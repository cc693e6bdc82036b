// The wgmma variant's loop alone (wgmma_loop_alone.hpp).

#include "tests/bench/wgmma_loop_alone.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/gpu/bulk_load.cuh"
#include "kernels/gpu/cuda_check.hpp"
#include "kernels/gpu/named_barrier.cuh"
#include "kernels/gpu/reconstruct.hpp"
#include "kernels/gpu/reconstruct_tile_io.cuh"
#include "kernels/gpu/wgmma.cuh"
#include "tests/bench/bench_random.cuh"
#include "tests/bench/clocked_run.cuh"

namespace svdserve::bench {
namespace {

using gpu::detail::kWarpgroupThreads;

constexpr uint32_t kConsumers = 2;
constexpr uint32_t kThreads = kConsumers * kWarpgroupThreads + 32;  // and the producer warp
// A stage as the kernel's: three 8 KiB blocks (upper US, lower US, V), each a big and a small
// FP16 part of 128 rows x 16 values.
constexpr uint32_t kPartBytes = 128 * 16 * 2;
constexpr uint32_t kBlockBytes = 2 * kPartBytes;
constexpr uint32_t kStageBytes = 3 * kBlockBytes;
constexpr uint32_t kStagingBytes = 128 * 128;  // a consumer's 128 x 128 bytes

template <uint32_t kStages>
constexpr std::size_t kSharedBytes = std::size_t{kStages} * kStageBytes +
                                     kConsumers * kStagingBytes;

#if SVDSERVE_HAS_WGMMA

using gpu::detail::WgmmaAccumulators;

constexpr uint32_t kSecondRowsBytes = kPartBytes / 2;  // the lower 64 rows of a part
// The kernel's stagger: consumer 1 starts once consumer 0 has issued this many steps (named
// barrier kStaggerBarrier; reconstruct_fused_wgmma.cu, stagger_steps() + 1 with 5 stages).
constexpr uint32_t kLeadSteps = 3;
constexpr uint32_t kStaggerBarrier = 1;

__device__ __forceinline__ void wait_for_the_leader() {
  gpu::detail::sync_named_barrier<kConsumers * kWarpgroupThreads>(kStaggerBarrier);
}

__device__ __forceinline__ void release_the_follower() {
  gpu::detail::arrive_named_barrier<kConsumers * kWarpgroupThreads>(kStaggerBarrier);
}

// Two values of 2^-10 with random signs and mantissas in one word, different in every stage.
__device__ __forceinline__ uint32_t random_f16_pair(uint64_t index) {
  constexpr uint32_t kTwoToMinus10 = 0x14001400;
  constexpr uint32_t kSignAndMantissa = 0x83FF83FF;
  return (static_cast<uint32_t>(splitmix64(index, /*seed=*/2024)) & kSignAndMantissa) |
         kTwoToMinus10;
}

// One consumer's six wgmmas of a step: the three products on its upper and lower 64 rows.
__device__ __forceinline__ void multiply(uint32_t stage_address, uint32_t consumer, bool accumulate,
                                         WgmmaAccumulators& top, WgmmaAccumulators& bottom) {
  constexpr uint32_t kLeading = gpu::detail::kKStepLeadingBytes;
  constexpr uint32_t kStride = gpu::detail::kKStepStrideBytes;
  const auto descriptor = [](uint32_t address) {
    constexpr uint32_t kFieldMask = 0x3FFF;
    return uint64_t{(address >> 4) & kFieldMask} | uint64_t{kLeading >> 4} << 16 |
           uint64_t{kStride >> 4} << 32;
  };
  const uint32_t us = stage_address + consumer * kBlockBytes;
  const uint32_t v = stage_address + 2 * kBlockBytes;
  gpu::detail::fence_wgmma_operands();
  gpu::detail::wgmma_f16(top, descriptor(us + kPartBytes), descriptor(v), accumulate);
  gpu::detail::wgmma_f16(top, descriptor(us), descriptor(v + kPartBytes), true);
  gpu::detail::wgmma_f16(top, descriptor(us), descriptor(v), true);
  const uint32_t lower = us + kSecondRowsBytes;
  gpu::detail::wgmma_f16(bottom, descriptor(lower + kPartBytes), descriptor(v), accumulate);
  gpu::detail::wgmma_f16(bottom, descriptor(lower), descriptor(v + kPartBytes), true);
  gpu::detail::wgmma_f16(bottom, descriptor(lower), descriptor(v), true);
  gpu::detail::commit_wgmma_group();
}

// The kernel's rounding of a set of accumulators into bytes of the staging tile.
__device__ __forceinline__ void round_into(const WgmmaAccumulators& d, unsigned char* staging,
                                           uint32_t thread) {
#pragma unroll
  for (uint32_t i = 0; i < gpu::detail::kWgmmaAccumulators; ++i) {
    staging[i * kWarpgroupThreads + thread] =
        static_cast<unsigned char>(gpu::detail::round_to_u8_packable(d[i]));
  }
}

#endif

template <uint32_t kStages>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_loop_kernel(float* __restrict__ out, uint32_t steps, uint32_t channel_steps,
                      ClockSample* clock) {
#if SVDSERVE_HAS_WGMMA
  extern __shared__ __align__(128) unsigned char shared[];
  __shared__ uint64_t full[kStages];
  __shared__ uint64_t empty[kStages];
  const auto words = static_cast<uint32_t>(kStages * kStageBytes / 4);
  for (uint32_t i = threadIdx.x; i < words; i += blockDim.x) {
    reinterpret_cast<uint32_t*>(shared)[i] = random_f16_pair(uint64_t{blockIdx.x} * words + i);
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
      for (uint32_t s = 0; s < steps; ++s) {
        gpu::detail::wait_barrier(&empty[s % kStages], (s / kStages % 2) ^ 1U);
        gpu::detail::arrive(&full[s % kStages]);
      }
    }
    return;
  }
  const auto shared_base = static_cast<uint32_t>(__cvta_generic_to_shared(shared));
  unsigned char* const staging = shared + kStages * kStageBytes + consumer * kStagingBytes;
  WgmmaAccumulators top;
  WgmmaAccumulators bottom;
  if (consumer == 1) wait_for_the_leader();
  bool follower_released = consumer == 1;
  uint32_t step = 0;
  while (step < steps) {
    const uint32_t channel_start = step;
    const uint32_t channel_end = min(steps, step + channel_steps);
#pragma unroll 1
    for (; step < channel_end; ++step) {
      const bool accumulate = step != channel_start;
      gpu::detail::wait_barrier(&full[step % kStages], step / kStages % 2);
      multiply(shared_base + step % kStages * kStageBytes, consumer, accumulate, top, bottom);
      if (!follower_released && step + 1 == kLeadSteps) {
        release_the_follower();
        follower_released = true;
      }
      if (accumulate) {
        gpu::detail::wait_wgmma<1>();  // the previous step's wgmmas: its stage is free
        if (thread == 0) gpu::detail::arrive(&empty[(step - 1) % kStages]);
      }
    }
    gpu::detail::wait_wgmma<0>();
    if (thread == 0) gpu::detail::arrive(&empty[(step - 1) % kStages]);
    gpu::detail::pin_accumulators(top);
    gpu::detail::pin_accumulators(bottom);
    round_into(top, staging, thread);
    round_into(bottom, staging + kStagingBytes / 2, thread);
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

template <uint32_t kStages>
WgmmaLoop measure(gpu::StreamView stream, int sms, uint32_t channel_steps) {
  constexpr uint32_t kSteps = 1U << 14;  // ~10 ms on an H100
  const auto blocks = static_cast<uint32_t>(sms);
  SVDSERVE_CUDA_CHECK(cudaFuncSetAttribute(wgmma_loop_kernel<kStages>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(kSharedBytes<kStages>)));
  gpu::DeviceBuffer out(std::size_t{blocks} * kThreads * sizeof(float));
  gpu::DeviceBuffer clock(sizeof(ClockSample));
  constexpr double kWgmmasPerStep = 6;
  const double flops = kWgmmasPerStep * gpu::detail::kWgmmaF16Flops * kSteps * kConsumers * blocks;
  const Peak peak = fastest_run(stream, flops, clock.as<ClockSample>(), [&] {
    wgmma_loop_kernel<kStages><<<blocks, kThreads, kSharedBytes<kStages>, stream.value()>>>(
        out.as<float>(), kSteps, channel_steps, clock.as<ClockSample>());
  });
  return {kStages, channel_steps, peak};
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
          measure<kDeepStages>(stream, sms, kSteps256)};
}

}  // namespace svdserve::bench
