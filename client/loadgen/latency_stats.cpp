#include "client/loadgen/latency_stats.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

namespace svdserve::loadgen {

double percentile(std::span<const double> sorted_samples, double p) {
  assert(!sorted_samples.empty());
  const auto n = sorted_samples.size();
  // p * n first: exact for whole p, so ceil() is not pushed up by a rounding error.
  const double clamped = std::clamp(p, 0.0, 100.0);
  const auto rank = static_cast<std::size_t>(std::ceil(clamped * static_cast<double>(n) / 100.0));
  return sorted_samples[std::clamp<std::size_t>(rank, 1, n) - 1];
}

LatencySummary summarize_latencies(std::vector<double> samples_ms) {
  LatencySummary summary;
  if (samples_ms.empty()) return summary;
  std::ranges::sort(samples_ms);
  summary.count = samples_ms.size();
  summary.min_ms = samples_ms.front();
  summary.max_ms = samples_ms.back();
  summary.mean_ms = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) /
                    static_cast<double>(samples_ms.size());
  summary.p50_ms = percentile(samples_ms, 50);
  summary.p90_ms = percentile(samples_ms, 90);
  summary.p99_ms = percentile(samples_ms, 99);
  return summary;
}

}  // namespace svdserve::loadgen
