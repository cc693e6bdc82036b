// One run's report: the numbers in its JSON and in its text.

#include "client/loadgen/bench_report.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace svdserve::loadgen {
namespace {

BenchReport twelve_requests() {
  BenchReport report;
  report.op = "reconstruct";
  report.server = "localhost:50051";
  report.image = "dir/\"quoted\".png";
  report.rank = 16;
  report.format = "u8";
  report.concurrency = 4;
  report.elapsed_s = 2.0;
  report.requests = 12;
  report.succeeded = 10;
  report.errors["UNAVAILABLE"] = 2;
  report.latency = summarize_latencies({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  return report;
}

TEST(BenchReportJson, CarriesTheNumbers) {
  const std::string text = bench_report_json(twelve_requests());
  EXPECT_NE(text.find("\"images_per_second\": 5"), std::string::npos) << text;
  EXPECT_NE(text.find("\"p50\": 5"), std::string::npos) << text;
  EXPECT_NE(text.find("\"p90\": 9"), std::string::npos) << text;
  EXPECT_NE(text.find("\"max\": 10"), std::string::npos) << text;
  EXPECT_NE(text.find("\"UNAVAILABLE\": 2"), std::string::npos) << text;
  EXPECT_NE(text.find("\"image\": \"dir/\\\"quoted\\\".png\""), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST(BenchReportText, CountsRatesLatenciesAndErrors) {
  std::ostringstream out;
  print_bench_text(out, twelve_requests(), "reconstruct");
  EXPECT_EQ(out.str(),
            "bench reconstruct: rank 16, u8, concurrency 4, 2.00 s\n"
            "requests   12 (10 ok, 2 failed)\n"
            "images/s   5.0\n"
            "latency ms p50 5.00  p90 9.00  p99 10.00  max 10.00  (mean 5.50)\n"
            "errors     UNAVAILABLE 2\n");
}

TEST(BenchReportText, EchoNamesWhatItImitatesAndStreamsTheirItems) {
  BenchReport echo = twelve_requests();
  echo.op = "echo";
  echo.request_bytes = 21;
  echo.response_bytes = 3145800;
  std::ostringstream out;
  print_bench_text(out, echo, "reconstruct");
  EXPECT_TRUE(out.str().starts_with("bench echo sized like reconstruct: rank 16, u8,")) << out.str();
  EXPECT_NE(out.str().find("bytes      request 21, response 3145800\n"), std::string::npos) << out.str();

  BenchReport stream = twelve_requests();
  stream.op = "stream";
  stream.images_per_request = 4;
  out.str("");
  print_bench_text(out, stream, "reconstruct");
  EXPECT_NE(out.str().find("(10 ok, 2 failed), each a stream of 4 images\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("images/s   20.0\n"), std::string::npos) << out.str();  // 10 streams of 4 in 2 s.

  BenchReport decompose = twelve_requests();
  decompose.op = "decompose";
  out.str("");
  print_bench_text(out, decompose, "decompose");
  EXPECT_TRUE(out.str().starts_with("bench decompose, concurrency 4, 2.00 s\n")) << out.str();
}

}  // namespace
}  // namespace svdserve::loadgen
