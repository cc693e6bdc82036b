#pragma once
// The one place where the server's events are counted. Each finished call, image job and batch
// is recorded once, here; GetStats (fill_stats) and Prometheus /metrics (prometheus_text.hpp)
// both read these numbers. Latency percentiles come from a window of recent jobs of every
// method, the Prometheus histograms (by method) from every job since start.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
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
  using CodeCounts = std::map<std::string, std::map<int, uint64_t>, std::less<>>;  // method -> code
  struct Totals {
    CodeCounts calls;
    CodeCounts items;  // of ReconstructStream and ReconstructBatch calls
    // (method, stage) -> seconds; stages: queue, decode, compute, encode, total
    std::map<std::pair<std::string, std::string>, Histogram> stage_seconds;
    Histogram batch_sizes;
  };

  // Every series of `labels` starts at zero.
  explicit MetricsSink(const MetricLabels& labels = {});

  void record_call(std::string_view method, grpc::StatusCode code) override;
  void record_item(std::string_view method, grpc::StatusCode code) override;
  void record_job(std::string_view method, const StageTimes& times, double total_us) override;
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
  void add_stage_locked(std::string_view method, const char* stage, double us);

  const Clock::time_point started_;
  mutable std::mutex mutex_;
  CodeCounts calls_;                                // guarded by mutex_
  CodeCounts items_;                                // guarded by mutex_
  std::map<std::string, RecentSamples> recent_us_;  // guarded by mutex_; by stage
  std::map<std::pair<std::string, std::string>, Histogram> stage_seconds_;  // guarded by mutex_
  Histogram batch_sizes_;                                              // guarded by mutex_
  std::array<uint64_t, kRateSeconds> images_by_second_{};              // guarded by mutex_
  std::array<int64_t, kRateSeconds> second_of_bucket_{};               // guarded by mutex_
};

}  // namespace svdserve
