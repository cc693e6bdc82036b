#pragma once
// The limits the kernel benchmark (svdserve_reconstruct_bench) divides by, and references that
// are not floors, all measured in the same run with CUDA events after warm-up: device-to-device
// copy bandwidth, write-only bandwidth, the FP32 FMA, TF32 mma.sync and wgmma peaks (with the SM
// clock during the wgmma runs), the wgmma variant's loop alone, and cuBLAS's SGEMM and FP16 GEMM.
// reconstruct_bench.cu's header says what each is for.

#include <algorithm>
#include <vector>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "bench/peak.hpp"
#include "bench/wgmma_loop_alone.hpp"

namespace svdserve::bench {

struct Limits {
  double d2d_gb_per_s = 0;
  double memset_gb_per_s = 0;
  double fma_tflops = 0;
  double tf32_mma_tflops = 0;
  Peak f16_wgmma;          // tflops 0: no wgmma on this device
  Peak f16_wgmma_random;   // the same on random operands (PeakOperands)
  Peak tf32_wgmma;         // for comparison with an earlier wgmma kernel, which ran TF32
  Peak tf32_wgmma_random;
  // Not a floor: the wgmma variant's loop alone (wgmma_loop_alone.hpp), without copies or
  // stores; how much of the distance to the floor its own structure accounts for.
  std::vector<WgmmaLoop> wgmma_loops;
  double sgemm_tflops = 0;
  double f16_gemm_tflops = 0;  // cuBLAS FP16 GEMM n^3, not a floor (0: no wgmma on this device)

  // wgmma's floor runs at the higher of its arithmetic's two peaks, since the chip reached it: the
  // constant-operand run (the first) can read lower, at a lower clock (TF32: 489.3-490.6 TFLOP/s
  // at 1.806-1.815 GHz against 494.1-495.0, H100); a floor on it made every ratio ~1 % better.
  [[nodiscard]] double wgmma_floor_tflops() const {
    return std::max(f16_wgmma.tflops, f16_wgmma_random.tflops);
  }
  [[nodiscard]] double tf32_wgmma_tflops() const {
    return std::max(tf32_wgmma.tflops, tf32_wgmma_random.tflops);
  }
};

// Every limit, on `stream` (a few seconds on an H100; `quick` uses smaller copies and GEMMs).
[[nodiscard]] Limits measure_kernel_limits(gpu::StreamView stream, int sms, bool quick);

// One line a limit; `mmas_per_product`: the MMAs the tensor and wgmma floors count per product.
void print_kernel_limits(const Limits& limits, bool quick, double mmas_per_product);

}  // namespace svdserve::bench
