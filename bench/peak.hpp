#pragma once
// A rate measured by a peak-style kernel, with the SM clock it ran at (clocked_run.cuh).

namespace svdserve::bench {

struct Peak {
  double tflops = 0;  // 0: not on this device
  double sm_ghz = 0;  // block 0's clock during that run (0: not sampled)
};

}  // namespace svdserve::bench
