#include "client/loadgen/latency_stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace svdserve::loadgen {
namespace {

TEST(Percentile, NearestRankOnOneToHundred) {
  std::vector<double> samples(100);
  std::iota(samples.begin(), samples.end(), 1.0);
  EXPECT_EQ(percentile(samples, 0), 1.0);
  EXPECT_EQ(percentile(samples, 1), 1.0);
  EXPECT_EQ(percentile(samples, 50), 50.0);
  EXPECT_EQ(percentile(samples, 90), 90.0);
  EXPECT_EQ(percentile(samples, 99), 99.0);
  EXPECT_EQ(percentile(samples, 99.5), 100.0);
  EXPECT_EQ(percentile(samples, 100), 100.0);
}

TEST(Percentile, SmallSamples) {
  const std::vector<double> one = {7.0};
  for (const double p : {0.0, 50.0, 99.0, 100.0}) EXPECT_EQ(percentile(one, p), 7.0);

  const std::vector<double> ten = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(percentile(ten, 50), 5.0);   // ceil(5) = 5th
  EXPECT_EQ(percentile(ten, 90), 9.0);   // ceil(9) = 9th, not pushed to 10 by rounding
  EXPECT_EQ(percentile(ten, 91), 10.0);  // ceil(9.1) = 10th
  EXPECT_EQ(percentile(ten, 99), 10.0);
}

TEST(Percentile, OutOfRangePIsClamped) {
  const std::vector<double> samples = {1, 2, 3};
  EXPECT_EQ(percentile(samples, -5), 1.0);
  EXPECT_EQ(percentile(samples, 500), 3.0);
}

TEST(SummarizeLatencies, EmptyIsAllZero) {
  const auto summary = summarize_latencies({});
  EXPECT_EQ(summary.count, 0u);
  EXPECT_EQ(summary.p50_ms, 0.0);
  EXPECT_EQ(summary.max_ms, 0.0);
}

TEST(SummarizeLatencies, SortsItsInputAndMatchesPercentile) {
  std::vector<double> samples(1000);
  std::mt19937 random(42);
  std::uniform_real_distribution<double> latency_ms(0.5, 80.0);
  for (auto& sample : samples) sample = latency_ms(random);

  const auto summary = summarize_latencies(samples);
  std::ranges::sort(samples);
  EXPECT_EQ(summary.count, 1000u);
  EXPECT_EQ(summary.min_ms, samples.front());
  EXPECT_EQ(summary.max_ms, samples.back());
  EXPECT_EQ(summary.p50_ms, samples[499]);
  EXPECT_EQ(summary.p90_ms, samples[899]);
  EXPECT_EQ(summary.p99_ms, samples[989]);
  const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / 1000.0;
  EXPECT_NEAR(summary.mean_ms, mean, 1e-9 * mean);
  EXPECT_LE(summary.p50_ms, summary.p90_ms);
  EXPECT_LE(summary.p90_ms, summary.p99_ms);
  EXPECT_LE(summary.p99_ms, summary.max_ms);
}

}  // namespace
}  // namespace svdserve::loadgen
