#pragma once
// Counters behind GetStats: calls by method and status code, per-stage latency percentiles over
// a window of recent jobs, batch sizes, and completed images per second over the last minute.

#include <grpcpp/support/status.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "server/runtime/job.hpp"
#include "server/process/metrics.hpp"
#include "svdserve/v1/svdserve.pb.h"

namespace svdserve {

class Stats {
 public:
  Stats();

  void record_call(const std::string& method, grpc::StatusCode code);
  // One finished image job (any outcome that reached a worker).
  void record_job(const StageTimes& times, double total_us);
  void record_batch(std::size_t size);

  // Every record_* is forwarded to /metrics too. Call before any traffic.
  void attach(Metrics* metrics) noexcept { metrics_ = metrics; }

  // Fills methods, latencies, images_per_second, batches, mean_batch_size and uptime_s.
  void fill(v1::GetStatsResponse& out) const;

 private:
  static constexpr std::size_t kWindow = 4096;  // latency samples kept per stage
  static constexpr std::size_t kRateSeconds = 60;

  struct Samples {
    std::vector<double> values;  // ring buffer of at most kWindow
    std::size_t next = 0;
    void add(double value);
  };

  const Clock::time_point started_;
  Metrics* metrics_ = nullptr;
  mutable std::mutex mutex_;
  std::map<std::string, std::map<grpc::StatusCode, uint64_t>> calls_;  // guarded by mutex_
  std::map<std::string, Samples> stages_;                              // guarded by mutex_
  std::array<uint64_t, kRateSeconds> images_by_second_{};              // guarded by mutex_
  std::array<int64_t, kRateSeconds> second_of_bucket_{};               // guarded by mutex_
  uint64_t batches_ = 0;                                               // guarded by mutex_
  uint64_t batched_jobs_ = 0;                                          // guarded by mutex_
};

}  // namespace svdserve
