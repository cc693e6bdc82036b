#pragma once
// bench --sweep: at each concurrency, the op and an echo of the same sizes (the transport's
// limit), side by side. The table and the JSON carry the same numbers.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "client/loadgen/bench_report.hpp"

namespace svdserve::loadgen {

struct SweepRow {
  BenchReport op;
  BenchReport echo;

  // op images/s over echo images/s: how close the service comes to the transport's limit.
  [[nodiscard]] double op_to_echo_ratio() const noexcept {
    const double echo_rate = echo.images_per_second();
    return echo_rate > 0 ? op.images_per_second() / echo_rate : 0.0;
  }
};

struct SweepReport {
  std::uint64_t max_connections = 0;  // Callers share min(concurrency, this) connections.
  double duration_s = 0;              // Of each run; 0 when runs were counted instead.
  std::uint64_t count = 0;            // Requests of each run; 0 when runs were timed.
  std::vector<SweepRow> rows{};  // In the order run, one per concurrency.
};

// One line of context (op, sizes, connections) and one table row per concurrency.
void print_sweep_table(std::ostream& out, const SweepReport& report);
// {"op": ..., "rows": [{"concurrency", "op": {...}, "echo": {...}, "op_to_echo_ratio"}]}.
[[nodiscard]] std::string sweep_report_json(const SweepReport& report);

}  // namespace svdserve::loadgen
