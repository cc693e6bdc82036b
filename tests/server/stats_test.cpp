#include "server/process/stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

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

TEST(Stats, EmptyStatsFillZeros) {
  Stats stats;
  v1::GetStatsResponse response;
  stats.fill(response);
  EXPECT_EQ(response.methods_size(), 0);
  EXPECT_EQ(response.latencies_size(), 0);
  EXPECT_EQ(response.batches(), 0u);
  EXPECT_EQ(response.mean_batch_size(), 0.0);
  EXPECT_EQ(response.images_per_second(), 0.0);
  EXPECT_GE(response.uptime_s(), 0.0);
}

TEST(Stats, CallsAreCountedByMethodAndCode) {
  Stats stats;
  for (int i = 0; i < 3; ++i) stats.record_call("Decompose", grpc::StatusCode::OK);
  stats.record_call("Decompose", grpc::StatusCode::INVALID_ARGUMENT);
  stats.record_call("Reconstruct", grpc::StatusCode::OK);
  stats.record_call("Reconstruct", grpc::StatusCode::NOT_FOUND);
  stats.record_call("Reconstruct", grpc::StatusCode::NOT_FOUND);

  v1::GetStatsResponse response;
  stats.fill(response);
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

TEST(Stats, StagePercentilesComeFromTheRecordedJobs) {
  Stats stats;
  std::vector<int> order(100);
  std::iota(order.begin(), order.end(), 1);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));  // percentiles must sort
  for (int i : order) {
    StageTimes times;
    times.queue_us = i;
    times.compute_us = 10.0 * i;
    times.encode_us = i % 2 ? 5.0 : 0.0;  // only jobs that encoded count for encode
    stats.record_job(times, 100.0 * i);
  }

  v1::GetStatsResponse response;
  stats.fill(response);
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

TEST(Stats, LatencyWindowKeepsTheMostRecentSamples) {
  Stats stats;
  constexpr int kJobs = 5000;
  for (int i = 1; i <= kJobs; ++i) {
    StageTimes times;
    times.queue_us = i;
    times.compute_us = 1;
    stats.record_job(times, i);
  }
  v1::GetStatsResponse response;
  stats.fill(response);
  const v1::LatencyPercentiles* queue = find_stage(response, "queue");
  ASSERT_NE(queue, nullptr);
  EXPECT_LT(queue->samples(), static_cast<uint64_t>(kJobs)) << "the window is bounded";
  EXPECT_DOUBLE_EQ(queue->max_us(), kJobs);
  // The oldest samples were overwritten, so the median sits among the recent ones.
  EXPECT_GT(queue->p50_us(), static_cast<double>(kJobs - queue->samples()));
}

TEST(Stats, BatchesAndMeanBatchSize) {
  Stats stats;
  stats.record_batch(4);
  stats.record_batch(2);
  stats.record_batch(9);
  v1::GetStatsResponse response;
  stats.fill(response);
  EXPECT_EQ(response.batches(), 3u);
  EXPECT_DOUBLE_EQ(response.mean_batch_size(), 5.0);
  EXPECT_GE(response.images_per_second(), 0.0);
}

}  // namespace
}  // namespace svdserve
