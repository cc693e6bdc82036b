// The closed-loop driver: callers share one stop condition, and their logs add up to a report
// whatever the threads' interleaving.

#include "client/loadgen/closed_loop.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace svdserve::loadgen {
namespace {

TEST(ClosedLoop, CallersTogetherSendExactlyTheCount) {
  std::atomic<std::uint64_t> sent{0};
  const std::vector<Call> calls(3, [&sent] {
    ++sent;
    return grpc::Status::OK;
  });
  auto stop = StopCondition::after_count(100);
  const auto logs = run_closed_loop(calls, stop);
  ASSERT_EQ(logs.size(), 3u);
  std::uint64_t logged = 0;
  for (const auto& log : logs) {
    logged += log.requests;
    EXPECT_EQ(log.latencies_ms.size(), log.requests);
    EXPECT_TRUE(log.errors.empty());
  }
  EXPECT_EQ(logged, 100u);
  EXPECT_EQ(sent.load(), 100u);
}

TEST(ClosedLoop, AnEndInThePastSendsNothing) {
  const std::vector<Call> calls(2, [] { return grpc::Status::OK; });
  auto stop = StopCondition::at(BenchClock::now() - std::chrono::seconds(1));
  for (const auto& log : run_closed_loop(calls, stop)) EXPECT_EQ(log.requests, 0u);
}

TEST(ClosedLoop, LogsAddUpToTheReportWithErrorsByCodeName) {
  const std::vector<Call> calls = {
      [] { return grpc::Status::OK; },
      [] { return grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"); },
      [] { return grpc::Status(grpc::StatusCode::NOT_FOUND, "gone"); },
  };
  auto stop = StopCondition::after_count(90);
  const auto logs = run_closed_loop(calls, stop);
  ASSERT_EQ(logs.size(), 3u);

  BenchReport report;
  add_caller_logs(logs, report);
  EXPECT_EQ(report.requests, 90u);
  EXPECT_EQ(report.succeeded, logs[0].requests);
  EXPECT_EQ(report.latency.count, logs[0].requests);
  EXPECT_EQ(report.failed(), logs[1].requests + logs[2].requests);
  EXPECT_EQ(report.unreachable, logs[1].requests);  // UNAVAILABLE counts as unreachable, NOT_FOUND not.
  const auto count_of = [&report](const char* code) {
    const auto found = report.errors.find(code);
    return found == report.errors.end() ? 0u : found->second;
  };
  EXPECT_EQ(count_of("UNAVAILABLE"), logs[1].requests);
  EXPECT_EQ(count_of("NOT_FOUND"), logs[2].requests);
  EXPECT_EQ(report.errors.size(), (logs[1].requests > 0 ? 1u : 0u) + (logs[2].requests > 0 ? 1u : 0u));
}

}  // namespace
}  // namespace svdserve::loadgen
