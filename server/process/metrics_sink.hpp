#pragma once
// The one place where the server's events are counted. Each finished call, image job and batch
// is recorded once, here; GetStats (fill_stats) and Prometheus /metrics (prometheus_text.hpp)
// both read these numbers. Latency percentiles come from a window of recent jobs, the
// Prometheus histograms from every job since start.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/grpc/call_metrics.hpp"
#include "server/runtime/pipeline_metrics.hpp"

namespace svdserve {

// Observations by bucket, as Prometheus histograms count them: a value goes into the first bucket
// whose upper bound is at least the value; one more bucket (+Inf) takes the rest.
struct Histogram {
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);

  std::vector<double> upper_bounds;  // ascending
  std::vector<uint64_t> counts;      // per bucket, not cumulative; the last is +Inf
  double sum = 0.0;
  uint64_t count = 0;
};

class MetricsSink final : public CallMetrics, public PipelineMetrics {
 public:
  // What /metrics shows of the recorded events: a copy, taken under the lock.
  struct Totals {
    std::map<std::string, std::map<int, uint64_t>, std::less<>> calls;  // method -> code -> count
    std::map<std::string, Histogram> stage_seconds;  // queue, decode, compute, encode, total
    Histogram batch_sizes;
  };

  MetricsSink();

  void record_call(std::string_view method, grpc::StatusCode code) override;
  void record_job(const StageTimes& times, double total_us) override;
  void record_batch(std::size_t size) override;

  void fill_stats(v1::GetStatsResponse& out) const override;
  [[nodiscard]] Totals totals() const;

 private:
  static constexpr std::size_t kWindow = 4096;  // latency samples kept per stage
  static constexpr std::size_t kRateSeconds = 60;

  // The most recent kWindow values, for percentiles.
  struct RecentSamples {
    std::vector<double> values;
    std::size_t next = 0;
    void add(double value);
  };
  struct Stage {
    RecentSamples recent_us;
    Histogram seconds;
  };

  void add_stage_locked(const char* stage, double us);

  const Clock::time_point started_;
  mutable std::mutex mutex_;
  std::map<std::string, std::map<int, uint64_t>, std::less<>> calls_;  // guarded by mutex_
  std::map<std::string, Stage> stages_;                                // guarded by mutex_
  Histogram batch_sizes_;                                              // guarded by mutex_
  std::array<uint64_t, kRateSeconds> images_by_second_{};              // guarded by mutex_
  std::array<int64_t, kRateSeconds> second_of_bucket_{};               // guarded by mutex_
};

}  // namespace svdserve
