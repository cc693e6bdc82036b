// The compute cost model admission relies on: nominal flops by solver (kernels/svd_flops.hpp),
// the CPU backend's choice between them (cpu/svd.hpp) and its rate (cpu/svd_cost.hpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "kernels/backend.hpp"
#include "kernels/cpu/svd.hpp"
#include "kernels/cpu/svd_cost.hpp"
#include "kernels/svd_flops.hpp"

namespace svdserve::test {
namespace {

// config.proto's default max_compute_ms.
constexpr double kDefaultMaxComputeSeconds = 60.0;

TEST(SvdFlops, GrowWithTheImageAndTheRank) {
  for (const uint32_t side : {256U, 1024U, 4096U}) {
    SCOPED_TRACE(side);
    EXPECT_LT(exact_svd_flops(side, side), exact_svd_flops(side, 2 * side));
    EXPECT_LT(exact_svd_flops(side, side), exact_svd_flops(2 * side, 2 * side));
    EXPECT_EQ(exact_svd_flops(side, 2 * side), exact_svd_flops(2 * side, side));
    EXPECT_LT(randomized_svd_flops(side, side, 96, 32, 3),
              randomized_svd_flops(2 * side, side, 96, 32, 3));
    EXPECT_LT(randomized_svd_flops(side, side, 96, 32, 3),
              randomized_svd_flops(side, side, 128, 64, 3));
    EXPECT_LT(randomized_svd_flops(side, side, 96, 32, 3),
              randomized_svd_flops(side, side, 96, 32, 4));
  }
}

// Every rank of a shape, through the switch from the randomized solver to sgesdd: the cost grows
// with the rank on either side (across it too where the plane is square-ish; a long thin plane's
// R-SVD costs less than the widest sketch).
TEST(CpuSvdCost, FollowsTheSolverChoiceAndGrowsWithTheRank) {
  for (const auto& [height, width] : {std::pair{512U, 512U}, {1024U, 768U}, {300U, 2000U}}) {
    SCOPED_TRACE(std::to_string(height) + "x" + std::to_string(width));
    const bool square_ish = std::max(height, width) < 2 * std::min(height, width);
    double previous = 0.0;
    CpuSvdEngine previous_engine = CpuSvdEngine::randomized;
    for (uint32_t rank = 1; rank <= std::min(height, width); ++rank) {
      const double flops = truncated_svd_flops(CpuSvdMethod::automatic, height, width, rank);
      const CpuSvdEngine engine =
          choose_svd_engine(CpuSvdMethod::automatic, height, width, rank);
      if (square_ish || engine == previous_engine) {
        ASSERT_GE(flops, previous) << "rank " << rank;
      }
      previous = flops;
      previous_engine = engine;
      if (engine == CpuSvdEngine::exact) {
        ASSERT_EQ(flops, exact_svd_flops(height, width)) << "rank " << rank;
      }
      ASSERT_EQ(truncated_svd_flops(CpuSvdMethod::exact, height, width, rank),
                exact_svd_flops(height, width));
    }
  }
}

TEST(CpuSvdCost, TheExactSolveOfAFullRankCostsFarMoreThanASmallRank) {
  const double full = truncated_svd_flops(CpuSvdMethod::automatic, 2048, 2048, 2048);
  const double small = truncated_svd_flops(CpuSvdMethod::automatic, 2048, 2048, 64);
  EXPECT_GT(full, 10 * small);
  EXPECT_EQ(choose_svd_engine(CpuSvdMethod::automatic, 2048, 2048, 64), CpuSvdEngine::randomized);
}

TEST(CpuSvdCost, TheBackendsEstimateSeparatesTheAttackFromOrdinaryRequests) {
  const auto backend = make_cpu_backend({.threads = 1});
  // An 8192^2 RGBA image at full rank (Compress with energy_fraction): far over the default.
  const double attack = backend->decompose_seconds_estimate({8192, 8192, 4}, 8192);
  EXPECT_GT(attack, 10 * kDefaultMaxComputeSeconds);
  // ... and at the default max rank 256, within it.
  EXPECT_LT(backend->decompose_seconds_estimate({8192, 8192, 4}, 256), kDefaultMaxComputeSeconds);
  // A 1024^2 photo at rank 64: well under a second.
  const double ordinary = backend->decompose_seconds_estimate({1024, 1024, 3}, 64);
  EXPECT_GT(ordinary, 0.0);
  EXPECT_LT(ordinary, 1.0);
  // Per plane: four channels cost four times one.
  EXPECT_DOUBLE_EQ(backend->decompose_seconds_estimate({1024, 1024, 4}, 64),
                   4 * backend->decompose_seconds_estimate({1024, 1024, 1}, 64));
}

TEST(CpuSvdCost, SlowerPlanesRaiseTheRateFasterOnesNeverLowerIt) {
  CpuSvdCost cost;
  const double measured = 1.0 / kCpuSvdFlopsPerSecond;
  EXPECT_DOUBLE_EQ(cost.seconds_per_flop(), measured);
  cost.record(1e10, 1e10 * measured / 4);  // four times faster than measured
  EXPECT_DOUBLE_EQ(cost.seconds_per_flop(), measured);
  cost.record(1e6, 1000.0);  // too small a plane to say anything
  EXPECT_DOUBLE_EQ(cost.seconds_per_flop(), measured);
  CpuSvdCost slower;
  slower.record(1e10, 1e10 * 3 * measured);
  EXPECT_DOUBLE_EQ(slower.seconds_per_flop(), 3 * measured);
  EXPECT_DOUBLE_EQ(slower.plane_seconds(CpuSvdMethod::exact, 1024, 1024, 1),
                   3 * measured * exact_svd_flops(1024, 1024));
  // One faster plane moves the mean part of the way back, never below the measured rate.
  slower.record(1e10, 1e10 * measured);
  EXPECT_LT(slower.seconds_per_flop(), 3 * measured);
  EXPECT_GT(slower.seconds_per_flop(), measured);
}

}  // namespace
}  // namespace svdserve::test
