#include "server/process/metrics_sink.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "server/process/prometheus_text.hpp"

namespace svdserve {
namespace {

const v1::MethodStats* find_method(const v1::GetStatsResponse& response, const std::string& name) {
  for (const auto& method : response.methods()) {
    if (method.method() == name) return &method;
  }
  return nullptr;
}

const v1::LatencyPercentiles* find_stage(const v1::GetStatsResponse& response,
                                         const std::string& stage) {
  for (const auto& latency : response.latencies()) {
    if (latency.stage() == stage) return &latency;
  }
  return nullptr;
}

uint64_t count_of(const v1::MethodStats& method, const std::string& code) {
  for (const auto& c : method.codes()) {
    if (c.code() == code) return c.count();
  }
  return 0;
}

TEST(MetricsSink, EmptyStatsFillZeros) {
  MetricsSink stats;
  v1::GetStatsResponse response;
  stats.fill_stats(response);
  EXPECT_EQ(response.methods_size(), 0);
  EXPECT_EQ(response.latencies_size(), 0);
  EXPECT_EQ(response.batches(), 0u);
  EXPECT_EQ(response.mean_batch_size(), 0.0);
  EXPECT_EQ(response.images_per_second(), 0.0);
  EXPECT_GE(response.uptime_s(), 0.0);
}

TEST(MetricsSink, CallsAreCountedByMethodAndCode) {
  MetricsSink stats;
  for (int i = 0; i < 3; ++i) stats.record_call("Decompose", grpc::StatusCode::OK);
  stats.record_call("Decompose", grpc::StatusCode::INVALID_ARGUMENT);
  stats.record_call("Reconstruct", grpc::StatusCode::OK);
  stats.record_call("Reconstruct", grpc::StatusCode::NOT_FOUND);
  stats.record_call("Reconstruct", grpc::StatusCode::NOT_FOUND);

  v1::GetStatsResponse response;
  stats.fill_stats(response);
  ASSERT_EQ(response.methods_size(), 2);
  const v1::MethodStats* decompose = find_method(response, "Decompose");
  ASSERT_NE(decompose, nullptr);
  EXPECT_EQ(decompose->requests(), 4u);
  EXPECT_EQ(count_of(*decompose, "OK"), 3u);
  EXPECT_EQ(count_of(*decompose, "INVALID_ARGUMENT"), 1u);
  EXPECT_EQ(decompose->codes_size(), 2);
  const v1::MethodStats* reconstruct = find_method(response, "Reconstruct");
  ASSERT_NE(reconstruct, nullptr);
  EXPECT_EQ(reconstruct->requests(), 3u);
  EXPECT_EQ(count_of(*reconstruct, "OK"), 1u);
  EXPECT_EQ(count_of(*reconstruct, "NOT_FOUND"), 2u);
}

TEST(MetricsSink, StagePercentilesComeFromTheRecordedJobs) {
  MetricsSink stats;
  std::vector<int> order(100);
  std::iota(order.begin(), order.end(), 1);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));  // percentiles must sort
  for (int i : order) {
    StageTimes times;
    times.queue_us = i;
    times.compute_us = 10.0 * i;
    times.encode_us = i % 2 ? 5.0 : 0.0;  // only jobs that encoded count for encode
    stats.record_job("Decompose", times, 100.0 * i);
  }

  v1::GetStatsResponse response;
  stats.fill_stats(response);
  const v1::LatencyPercentiles* queue = find_stage(response, "queue");
  ASSERT_NE(queue, nullptr);
  EXPECT_EQ(queue->samples(), 100u);
  // Nearest rank on 1..100: index round(p * 99).
  EXPECT_DOUBLE_EQ(queue->p50_us(), 51.0);
  EXPECT_DOUBLE_EQ(queue->p90_us(), 90.0);
  EXPECT_DOUBLE_EQ(queue->p99_us(), 99.0);
  EXPECT_DOUBLE_EQ(queue->max_us(), 100.0);

  const v1::LatencyPercentiles* compute = find_stage(response, "compute");
  ASSERT_NE(compute, nullptr);
  EXPECT_DOUBLE_EQ(compute->p50_us(), 510.0);
  EXPECT_DOUBLE_EQ(compute->max_us(), 1000.0);
  const v1::LatencyPercentiles* total = find_stage(response, "total");
  ASSERT_NE(total, nullptr);
  EXPECT_DOUBLE_EQ(total->p99_us(), 9900.0);

  EXPECT_EQ(find_stage(response, "decode"), nullptr) << "no job decoded";
  const v1::LatencyPercentiles* encode = find_stage(response, "encode");
  ASSERT_NE(encode, nullptr);
  EXPECT_EQ(encode->samples(), 50u);
  EXPECT_DOUBLE_EQ(encode->p50_us(), 5.0);
}

TEST(MetricsSink, LatencyWindowKeepsTheMostRecentSamples) {
  MetricsSink stats;
  constexpr int kJobs = 5000;
  for (int i = 1; i <= kJobs; ++i) {
    StageTimes times;
    times.queue_us = i;
    times.compute_us = 1;
    stats.record_job("Decompose", times, i);
  }
  v1::GetStatsResponse response;
  stats.fill_stats(response);
  const v1::LatencyPercentiles* queue = find_stage(response, "queue");
  ASSERT_NE(queue, nullptr);
  EXPECT_LT(queue->samples(), static_cast<uint64_t>(kJobs)) << "the window is bounded";
  EXPECT_DOUBLE_EQ(queue->max_us(), kJobs);
  // The oldest samples were overwritten, so the median sits among the recent ones.
  EXPECT_GT(queue->p50_us(), static_cast<double>(kJobs - queue->samples()));
}

TEST(MetricsSink, BatchesAndMeanBatchSize) {
  MetricsSink stats;
  stats.record_batch(4);
  stats.record_batch(2);
  stats.record_batch(9);
  v1::GetStatsResponse response;
  stats.fill_stats(response);
  EXPECT_EQ(response.batches(), 3u);
  EXPECT_DOUBLE_EQ(response.mean_batch_size(), 5.0);
  EXPECT_GE(response.images_per_second(), 0.0);
}

// The value of the sample line `series` (name and labels) in Prometheus text, or -1.
double sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// Each event is recorded once: GetStats and /metrics read the same counts.
TEST(MetricsSink, GetStatsAndPrometheusReadTheSameEvents) {
  MetricsSink sink;
  for (int i = 0; i < 3; ++i) sink.record_call("Reconstruct", grpc::StatusCode::OK);
  sink.record_call("Reconstruct", grpc::StatusCode::NOT_FOUND);
  sink.record_call("Decompose", static_cast<grpc::StatusCode>(99));
  StageTimes decoded{.queue_us = 30, .decode_us = 400, .compute_us = 2000};
  StageTimes encoded{.queue_us = 10, .compute_us = 800, .encode_us = 70};
  sink.record_job("Decompose", decoded, 2500);
  sink.record_job("Reconstruct", encoded, 900);
  sink.record_batch(2);
  sink.record_batch(5);

  v1::GetStatsResponse response;
  sink.fill_stats(response);
  const std::string text = prometheus_text(sink.totals(), LiveValues{});

  const v1::MethodStats* reconstruct = find_method(response, "Reconstruct");
  ASSERT_NE(reconstruct, nullptr);
  EXPECT_EQ(count_of(*reconstruct, "OK"), 3u);
  EXPECT_EQ(sample(text, R"(svdserve_requests_total{code="OK",method="Reconstruct"})"), 3);
  EXPECT_EQ(count_of(*reconstruct, "NOT_FOUND"), 1u);
  EXPECT_EQ(sample(text, R"(svdserve_requests_total{code="NOT_FOUND",method="Reconstruct"})"), 1);
  const v1::MethodStats* decompose = find_method(response, "Decompose");
  ASSERT_NE(decompose, nullptr);
  EXPECT_EQ(count_of(*decompose, "CODE_99"), 1u);
  EXPECT_EQ(sample(text, R"(svdserve_requests_total{code="CODE_99",method="Decompose"})"), 1);

  // GetStats over every method; /metrics by method.
  for (const auto& [stage, jobs] :
       {std::pair{"queue", 2}, {"decode", 1}, {"compute", 2}, {"encode", 1}, {"total", 2}}) {
    SCOPED_TRACE(stage);
    const v1::LatencyPercentiles* latency = find_stage(response, stage);
    ASSERT_NE(latency, nullptr);
    EXPECT_EQ(latency->samples(), static_cast<uint64_t>(jobs));
    const auto series = [stage](const char* method) {
      return std::string("svdserve_stage_duration_seconds_count{method=\"") + method +
             "\",stage=\"" + stage + "\"}";
    };
    const double decompose_jobs = sample(text, series("Decompose"));
    const double reconstruct_jobs = sample(text, series("Reconstruct"));
    EXPECT_EQ(std::max(decompose_jobs, 0.0) + std::max(reconstruct_jobs, 0.0), jobs);
  }
  EXPECT_DOUBLE_EQ(find_stage(response, "compute")->max_us(), 2000.0);
  EXPECT_NEAR(
      sample(text, R"(svdserve_stage_duration_seconds_sum{method="Decompose",stage="compute"})"),
      2000e-6, 1e-12);
  // 400 us falls in the bucket bounded by 400 us (50 us doubling), not below it.
  EXPECT_EQ(sample(text, R"(svdserve_stage_duration_seconds_bucket{method="Decompose",stage="decode",le="0.0002"})"),
            0);
  EXPECT_EQ(sample(text, R"(svdserve_stage_duration_seconds_bucket{method="Decompose",stage="decode",le="0.0004"})"),
            1);
  EXPECT_EQ(sample(text, R"(svdserve_stage_duration_seconds_bucket{method="Decompose",stage="decode",le="+Inf"})"),
            1);

  EXPECT_EQ(response.batches(), 2u);
  EXPECT_DOUBLE_EQ(response.mean_batch_size(), 3.5);
  EXPECT_EQ(sample(text, "svdserve_batch_size_count"), 2);
  EXPECT_EQ(sample(text, "svdserve_batch_size_sum"), 7);
  EXPECT_EQ(sample(text, R"(svdserve_batch_size_bucket{le="4"})"), 1);
  EXPECT_EQ(sample(text, R"(svdserve_batch_size_bucket{le="8"})"), 2);
}

// The gauges show the values sampled at scrape time.
TEST(MetricsSink, PrometheusTextShowsTheLiveValues) {
  LiveValues live;
  live.decode_queue_depth = 3;
  live.jobs_in_flight = 5;
  live.images_resident = 2;
  live.budget_bytes = 1 << 20;
  live.evictions = 4;
  live.host_buffers.fallbacks = 6;
  live.streams = {.computing = 7, .max_computing = 9};
  live.unsent = {.held_bytes = 8, .budget_bytes = 10, .waiting_calls = 11};
  const std::string text = prometheus_text(MetricsSink().totals(), live);
  EXPECT_EQ(sample(text, R"(svdserve_queue_depth{queue="decode"})"), 3);
  EXPECT_EQ(sample(text, R"(svdserve_queue_depth{queue="compute"})"), 0);
  EXPECT_EQ(sample(text, "svdserve_jobs_in_flight"), 5);
  EXPECT_EQ(sample(text, "svdserve_images_resident"), 2);
  EXPECT_EQ(sample(text, "svdserve_memory_budget_bytes"), 1 << 20);
  EXPECT_EQ(sample(text, "svdserve_evictions_total"), 4);
  EXPECT_EQ(sample(text, R"(svdserve_host_buffers_total{source="fallback"})"), 6);
  EXPECT_EQ(sample(text, "svdserve_stream_requests_computing"), 7);
  EXPECT_EQ(sample(text, "svdserve_stream_requests_computing_budget"), 9);
  EXPECT_EQ(sample(text, "svdserve_unsent_bytes"), 8);
  EXPECT_EQ(sample(text, "svdserve_unsent_bytes_budget"), 10);
  EXPECT_EQ(sample(text, "svdserve_calls_waiting_for_unsent_bytes"), 11);
  EXPECT_EQ(text.find("svdserve_gpu_"), std::string::npos) << "no device, no GPU gauges";
  EXPECT_EQ(sample(text, "svdserve_batch_size_count"), 0);
}

// Every series of the labels given is there from the start, at zero; GetStats shows only what
// happened.
TEST(MetricsSink, TheLabelsGivenStartAtZero) {
  MetricLabels labels;
  labels.methods = {"Reconstruct", "Echo"};
  labels.item_methods = {"ReconstructStream"};
  labels.job_methods = {"Reconstruct"};
  labels.codes = {grpc::StatusCode::OK, grpc::StatusCode::NOT_FOUND};
  MetricsSink sink(labels);
  sink.record_item("ReconstructStream", grpc::StatusCode::NOT_FOUND);

  const std::string text = prometheus_text(sink.totals(), LiveValues{});
  EXPECT_EQ(sample(text, R"(svdserve_requests_total{code="OK",method="Echo"})"), 0);
  EXPECT_EQ(sample(text, R"(svdserve_requests_total{code="NOT_FOUND",method="Reconstruct"})"), 0);
  EXPECT_EQ(sample(text, R"(svdserve_items_total{code="OK",method="ReconstructStream"})"), 0);
  EXPECT_EQ(sample(text, R"(svdserve_items_total{code="NOT_FOUND",method="ReconstructStream"})"),
            1);
  EXPECT_EQ(sample(text, R"(svdserve_stage_duration_seconds_count{method="Reconstruct",stage="encode"})"),
            0);

  v1::GetStatsResponse response;
  sink.fill_stats(response);
  EXPECT_EQ(response.methods_size(), 0);
  ASSERT_EQ(response.items_size(), 1);
  EXPECT_EQ(response.items(0).method(), "ReconstructStream");
  EXPECT_EQ(response.items(0).requests(), 1u);
  ASSERT_EQ(response.items(0).codes_size(), 1);
  EXPECT_EQ(response.items(0).codes(0).code(), "NOT_FOUND");
}

}  // namespace
}  // namespace svdserve
