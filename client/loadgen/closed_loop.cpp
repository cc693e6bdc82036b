#include "client/loadgen/closed_loop.hpp"

#include <string>
#include <thread>

#include "client/status_text.hpp"

namespace svdserve::loadgen {

std::vector<CallerLog> run_closed_loop(const std::vector<Call>& calls, StopCondition& stop) {
  std::vector<CallerLog> logs(calls.size());
  {
    std::vector<std::jthread> callers;
    callers.reserve(calls.size());
    for (std::size_t c = 0; c < calls.size(); ++c) {
      callers.emplace_back([&, c] {
        CallerLog& log = logs[c];
        while (stop.next()) {
          const auto start = BenchClock::now();
          const grpc::Status status = calls[c]();
          const double latency_ms = std::chrono::duration<double, std::milli>(BenchClock::now() - start).count();
          ++log.requests;
          if (status.ok()) {
            log.latencies_ms.push_back(latency_ms);
          } else {
            ++log.errors[status.error_code()];
          }
        }
      });
    }
  }
  return logs;
}

void add_caller_logs(std::span<const CallerLog> logs, BenchReport& report) {
  std::vector<double> latencies;
  for (const auto& log : logs) {
    report.requests += log.requests;
    report.succeeded += log.latencies_ms.size();
    latencies.insert(latencies.end(), log.latencies_ms.begin(), log.latencies_ms.end());
    for (const auto& [code, count] : log.errors) {
      report.errors[std::string(status_code_name(code))] += count;
      if (is_unreachable(code)) report.unreachable += count;
    }
  }
  report.latency = summarize_latencies(std::move(latencies));
}

}  // namespace svdserve::loadgen
