#pragma once
// Timing a peak-style kernel with its SM clock (the kernel benchmark's wgmma peaks and the wgmma
// variant's loop alone): block 0's thread 0 samples clock64 and the global timer at the start
// and end of its work, and the fastest of five runs after a warm-up counts, with its own clock.
// The clock matters because the chip's power limit moves it with the operands' bits.

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "bench/peak.hpp"

namespace svdserve::bench {

struct ClockSample {
  unsigned long long cycles[2];  // clock64 at the start [0] and the end [1]
  unsigned long long ns[2];      // the global timer at the same moments
};

__device__ __forceinline__ void sample_clock(ClockSample* sample, int at) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  unsigned long long ns = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  sample->cycles[at] = clock64();
  sample->ns[at] = ns;
}

// Runs `launch` (one kernel that samples into `clock`) after a warm-up, five times on `stream`;
// returns the fastest run's rate for `flops` FLOPs a run, and that run's clock.
template <typename Launch>
Peak fastest_run(gpu::StreamView stream, double flops, ClockSample* clock, Launch launch) {
  constexpr int kRuns = 5;
  const gpu::Event start(true);
  const gpu::Event stop(true);
  Peak peak;
  for (int run = -1; run < kRuns; ++run) {
    SVDSERVE_CUDA_CHECK(cudaMemsetAsync(clock, 0, sizeof(ClockSample), stream.value()));
    start.record(stream);
    launch();
    SVDSERVE_CUDA_CHECK(cudaGetLastError());
    stop.record(stream);
    stop.synchronize();
    const double tflops = flops / (gpu::Event::elapsed_ms(start, stop) * 1e-3) / 1e12;
    ClockSample sample{};
    SVDSERVE_CUDA_CHECK(cudaMemcpy(&sample, clock, sizeof(sample), cudaMemcpyDeviceToHost));
    if (run < 0 || tflops <= peak.tflops) continue;  // the warm-up, or not the fastest
    peak.tflops = tflops;
    peak.sm_ghz = sample.ns[1] > sample.ns[0]
                      ? static_cast<double>(sample.cycles[1] - sample.cycles[0]) /
                            static_cast<double>(sample.ns[1] - sample.ns[0])
                      : 0;  // no sample: the kernel body did not run
  }
  return peak;
}

}  // namespace svdserve::bench
