#pragma once
// What one plane's SVD costs the CPU backend, in seconds of one worker thread: the nominal flops
// of the solver truncated_svd picks (svd.hpp), over this host's rate. The rate is the one
// measured for kCpuSvdFlopsPerSecond or, where the planes solved since have gone slower (a
// loaded or slower host), theirs: estimates rise with what is observed, never fall below it.

#include <atomic>
#include <cstdint>

#include "kernels/cpu/svd_method.hpp"

namespace svdserve {

// Nominal flops per second of one worker thread: svdserve_cpu_svd_bench --cost, 4 shapes x 3
// ranks, 2-core AVX-512 build host under load: 32-73 (docs/PERFORMANCE.md section 7), floored.
inline constexpr double kCpuSvdFlopsPerSecond = 30e9;

class CpuSvdCost {
 public:
  [[nodiscard]] double plane_seconds(CpuSvdMethod method, uint32_t height, uint32_t width,
                                     uint32_t rank) const noexcept;

  // One plane solved: its nominal flops and the seconds it took. Thread-safe.
  void record(double flops, double seconds) noexcept;

  [[nodiscard]] double seconds_per_flop() const noexcept;

 private:
  // Mean over recent large planes (exponentially weighted); 0 until one is seen. Updates from
  // threads that race may be lost, which only slows the average down.
  std::atomic<double> observed_seconds_per_flop_{0.0};
};

}  // namespace svdserve
