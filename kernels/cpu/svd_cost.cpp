#include "kernels/cpu/svd_cost.hpp"

#include <algorithm>

#include "kernels/cpu/svd.hpp"

namespace svdserve {
namespace {

// Smaller planes are timed mostly by fixed overheads (allocation, LAPACK's workspace queries):
// 1 GFlop is about 30 ms at kCpuSvdFlopsPerSecond.
constexpr double kMinObservedFlops = 1e9;
// Weight of the newest plane: an outlier (a preempted thread) moves the mean by an eighth.
constexpr double kObservedWeight = 1.0 / 8.0;

}  // namespace

double CpuSvdCost::plane_seconds(CpuSvdMethod method, uint32_t height, uint32_t width,
                                 uint32_t rank) const noexcept {
  return truncated_svd_flops(method, height, width, rank) * seconds_per_flop();
}

void CpuSvdCost::record(double flops, double seconds) noexcept {
  if (flops < kMinObservedFlops || !(seconds > 0.0)) return;
  const double latest = seconds / flops;
  const double mean = observed_seconds_per_flop_.load(std::memory_order_relaxed);
  observed_seconds_per_flop_.store(
      mean == 0.0 ? latest : mean + kObservedWeight * (latest - mean), std::memory_order_relaxed);
}

double CpuSvdCost::seconds_per_flop() const noexcept {
  return std::max(1.0 / kCpuSvdFlopsPerSecond,
                  observed_seconds_per_flop_.load(std::memory_order_relaxed));
}

}  // namespace svdserve
