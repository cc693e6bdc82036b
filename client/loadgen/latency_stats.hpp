#pragma once
// Latency percentiles for bench, by the nearest-rank method: the p-th percentile of n sorted
// samples is the ceil(p/100 * n)-th smallest, so every reported value is a measured one.

#include <cstddef>
#include <span>
#include <vector>

namespace svdserve::loadgen {

// sorted_samples ascending and not empty; p in [0, 100] (0 gives the minimum).
[[nodiscard]] double percentile(std::span<const double> sorted_samples, double p);

struct LatencySummary {
  std::size_t count = 0;
  double min_ms = 0;
  double mean_ms = 0;
  double p50_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

// All zero when there are no samples.
[[nodiscard]] LatencySummary summarize_latencies(std::vector<double> samples_ms);

}  // namespace svdserve::loadgen
