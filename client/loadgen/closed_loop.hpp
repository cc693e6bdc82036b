#pragma once
// Closed-loop load: C callers, each sending its next request when the previous one is
// answered, until a count or a time; then the callers' logs folded into a BenchReport.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include <grpcpp/support/status.h>

#include "client/loadgen/bench_report.hpp"

namespace svdserve::loadgen {

using BenchClock = std::chrono::steady_clock;

// One caller's next request; returns the call's status.
using Call = std::function<grpc::Status()>;

// Stops after a number of calls or at a time, whichever the command line chose.
class StopCondition {
 public:
  static StopCondition after_count(std::uint64_t count) { return StopCondition(count, {}); }
  static StopCondition at(BenchClock::time_point end) { return StopCondition(std::nullopt, end); }

  // True when one more call may start; counts it.
  bool next() {
    if (count_) return issued_.fetch_add(1, std::memory_order_relaxed) < *count_;
    return BenchClock::now() < end_;
  }

 private:
  StopCondition(std::optional<std::uint64_t> count, BenchClock::time_point end) : count_(count), end_(end) {}

  std::optional<std::uint64_t> count_;
  BenchClock::time_point end_;
  std::atomic<std::uint64_t> issued_{0};
};

struct CallerLog {
  std::vector<double> latencies_ms;  // Of the successful calls.
  std::map<grpc::StatusCode, std::uint64_t> errors;
  std::uint64_t requests = 0;
};

// Runs one caller (thread) per entry of calls until stop says no; returns each caller's log.
[[nodiscard]] std::vector<CallerLog> run_closed_loop(const std::vector<Call>& calls, StopCondition& stop);

// Adds the logs' requests, successes, errors (by code name) and latency summary to report.
void add_caller_logs(std::span<const CallerLog> logs, BenchReport& report);

}  // namespace svdserve::loadgen
