#pragma once
// A rate measured by a peak-style kernel, with the SM clock it ran at (clocked_run.cuh).

namespace svdserve::bench {

struct Peak {
  double tflops = 0;  // 0: not on this device
  double sm_ghz = 0;  // block 0's clock during that run (0: not sampled)

  // FLOPs per SM and clock cycle: the rate with the clock taken out (0 without a clock).
  [[nodiscard]] double flops_per_clock(int sms) const {
    return sm_ghz > 0 ? tflops * 1e12 / (sm_ghz * 1e9) / sms : 0;
  }
};

}  // namespace svdserve::bench
