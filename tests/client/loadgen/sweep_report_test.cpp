// The sweep table and its JSON: one row per concurrency, op and echo side by side, the ratio.

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "client/loadgen/sweep_report.hpp"

namespace svdserve::loadgen {
namespace {

BenchReport run_of(const std::string& op, std::uint64_t concurrency, std::uint64_t succeeded,
                   std::vector<double> latencies_ms) {
  BenchReport report;
  report.op = op;
  report.rank = 16;
  report.format = "u8";
  report.concurrency = concurrency;
  report.connections = concurrency;
  report.request_bytes = 21;
  report.response_bytes = 3145800;
  report.elapsed_s = 2.0;
  report.requests = succeeded;
  report.succeeded = succeeded;
  report.latency = summarize_latencies(std::move(latencies_ms));
  return report;
}

SweepReport two_levels() {
  SweepReport report{.max_connections = 4, .duration_s = 2.0};
  report.rows.push_back({run_of("reconstruct", 1, 100, {1, 2, 3}), run_of("echo", 1, 200, {0.5, 1})});
  SweepRow second{run_of("reconstruct", 4, 300, {4, 5, 6}), run_of("echo", 4, 400, {2, 3})};
  second.op.requests = 303;
  second.op.errors["UNAVAILABLE"] = 3;
  report.rows.push_back(second);
  return report;
}

TEST(SweepReport, RatioIsOpOverEcho) {
  const SweepReport report = two_levels();
  EXPECT_DOUBLE_EQ(report.rows[0].op_to_echo_ratio(), 0.5);
  EXPECT_DOUBLE_EQ(report.rows[1].op_to_echo_ratio(), 0.75);
  EXPECT_DOUBLE_EQ(SweepRow{}.op_to_echo_ratio(), 0.0);  // No echo: no ratio, not a division by 0.
}

TEST(SweepReport, TableHasAHeaderAndOneRowPerConcurrency) {
  std::ostringstream out;
  print_sweep_table(out, two_levels());
  const std::string text = out.str();
  EXPECT_NE(text.find("bench reconstruct (op) vs echo"), std::string::npos) << text;
  EXPECT_NE(text.find("response 3145800 B (echo 3145800 B)"), std::string::npos) << text;
  EXPECT_NE(text.find("min(C, 4) connections; 2.0 s per run"), std::string::npos) << text;
  EXPECT_NE(text.find("op img/s"), std::string::npos) << text;
  EXPECT_NE(text.find("echo img/s"), std::string::npos) << text;
  // Row 1: 50 op images/s, p50 2 ms, p99 3 ms, no failures; 100 echo images/s, p50 0.5 ms; 50%.
  EXPECT_NE(text.find("    1        50.0     2.00     3.00     0       100.0     0.50     1.00     0    50.0%"),
            std::string::npos)
      << text;
  // Row 2 shows its 3 failed calls and 75%.
  EXPECT_NE(text.find("    4       150.0     5.00     6.00     3       200.0     2.00     3.00     0    75.0%"),
            std::string::npos)
      << text;
  std::size_t lines = 0;
  for (const char c : text) lines += c == '\n' ? 1 : 0;
  EXPECT_EQ(lines, 4u);  // Context, header, two rows.
}

TEST(SweepReport, JsonCarriesEveryRunAndTheRatio) {
  const std::string json = sweep_report_json(two_levels());
  EXPECT_NE(json.find("\"op\": \"reconstruct\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"max_connections\": 4"), std::string::npos) << json;
  EXPECT_NE(json.find("\"duration_s\": 2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"op_to_echo_ratio\": 0.5"), std::string::npos) << json;
  EXPECT_NE(json.find("\"op_to_echo_ratio\": 0.75"), std::string::npos) << json;
  EXPECT_NE(json.find("\"op\": \"echo\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"UNAVAILABLE\": 3"), std::string::npos) << json;
  EXPECT_NE(json.find("\"images_per_second\": 200"), std::string::npos) << json;
  EXPECT_EQ(json.back(), '\n');
}

TEST(SweepReport, EmptySweepPrintsNothingAndWritesNoRows) {
  std::ostringstream out;
  print_sweep_table(out, SweepReport{});
  EXPECT_TRUE(out.str().empty());
  EXPECT_NE(sweep_report_json(SweepReport{}).find("\"rows\": []"), std::string::npos);
}

}  // namespace
}  // namespace svdserve::loadgen
