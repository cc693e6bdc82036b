// Rank choice and error from singular values, on hand-made spectra and against errors measured
// directly on images (||A - A_k||_F / ||A||_F from the backend's reconstruction, in double).

#include "kernels/spectrum.hpp"

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "kernels/backend.hpp"
#include "reference_svd.hpp"
#include "test_images.hpp"

namespace svdserve::test {
namespace {

// Spectra computed in double from float values; the hand-made cases are exact in binary.
constexpr double kExactTolerance = 1e-12;
// Measured vs predicted relative error: both come from the same fp32 factors, so they differ by
// fp32 rounding of the approximation, well under 1e-4 of ||A||_F.
constexpr double kMeasuredErrorTolerance = 1e-4;

TEST(RelativeErrorAtRank, HandMadeSpectra) {
  // Energies 16 and 9 in one channel, 0 in the other: total 25.
  const Spectra spectra = {{4.0F, 3.0F}, {0.0F, 0.0F}};
  EXPECT_NEAR(relative_error_at_rank(spectra, 0), 1.0, kExactTolerance);
  EXPECT_NEAR(relative_error_at_rank(spectra, 1), 0.6, kExactTolerance);
  EXPECT_NEAR(relative_error_at_rank(spectra, 2), 0.0, kExactTolerance);
  EXPECT_EQ(relative_error_at_rank(spectra, 100), 0.0);
}

TEST(RelativeErrorAtRank, SumsChannelsTogether) {
  // Channel energies {9, 4} and {16, 0}: total 29, dropped at rank 1 is 4.
  const Spectra spectra = {{3.0F, 2.0F}, {4.0F, 0.0F}};
  EXPECT_NEAR(relative_error_at_rank(spectra, 1), std::sqrt(4.0 / 29.0), kExactTolerance);
}

TEST(RelativeErrorAtRank, AllZeroAndEmptySpectraHaveNoError) {
  EXPECT_EQ(relative_error_at_rank({{0.0F, 0.0F}, {0.0F, 0.0F}}, 1), 0.0);
  EXPECT_EQ(relative_error_at_rank({}, 1), 0.0);
  EXPECT_EQ(relative_error_at_rank({{}}, 0), 0.0);
}

TEST(RelativeErrorAtRank, StaysAccurateWhenTheErrorIsTiny) {
  // Dropped energy 1e-10 of the total: total - kept would lose it to cancellation.
  const Spectra spectra = {{1.0e5F, 1.0F}};
  EXPECT_NEAR(relative_error_at_rank(spectra, 1), 1.0e-5, 1e-5 * 1e-6);
}

TEST(RelativeErrorAtRank, MatchesErrorMeasuredOnImages) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const auto backend = make_cpu_backend({.threads = 0});
  const ImageF32 random = random_image({90, 70, 3}, seed);
  const ImageF32 real = image_from_mat(read_test_image("home.jpg", cv::IMREAD_UNCHANGED));
  for (const ImageF32* image : {&random, &real}) {
    const ImageF32* images[] = {image};
    const auto factors = backend->decompose(images, std::numeric_limits<uint32_t>::max()).front();
    const auto& cpu = dynamic_cast<const CpuFactors&>(*factors);
    for (const uint32_t rank : {1U, 5U, 20U}) {
      double error_squared = 0.0;
      double norm_squared = 0.0;
      for (uint32_t c = 0; c < image->shape.channels; ++c) {
        const std::vector<double> original(image->plane(c).begin(), image->plane(c).end());
        error_squared +=
            std::pow(frobenius_distance(original, rank_k_from_factors(cpu, c, rank)), 2);
        norm_squared += std::pow(frobenius_norm(original), 2);
      }
      EXPECT_NEAR(relative_error_at_rank(factors->all_singular_values(), rank),
                  std::sqrt(error_squared / norm_squared), kMeasuredErrorTolerance)
          << image->shape.width << "x" << image->shape.height << " at rank " << rank;
    }
  }
}

TEST(RankForEnergy, PicksTheSmallestRankReachingTheFraction) {
  // Energies 4, 1, 1 (total 6) in one channel.
  const Spectra spectra = {{2.0F, 1.0F, 1.0F}};
  EXPECT_EQ(rank_for_energy(spectra, 0.5), 1U);  // 4/6 >= 0.5
  EXPECT_EQ(rank_for_energy(spectra, 0.7), 2U);  // 5/6 >= 0.7 > 4/6
  EXPECT_EQ(rank_for_energy(spectra, 0.9), 3U);  // 6/6 >= 0.9 > 5/6
  EXPECT_EQ(rank_for_energy(spectra, 1.0), 3U);
  EXPECT_EQ(rank_for_energy(spectra, 0.75), 2U);  // exact in binary: 4.5 of 6 needs rank 2
}

TEST(RankForEnergy, SumsChannelsTogether) {
  // Per rank, energies 1+9 = 10, 4+0 = 4, 1+0 = 1: total 15.
  const Spectra spectra = {{1.0F, 2.0F, 1.0F}, {3.0F, 0.0F, 0.0F}};
  EXPECT_EQ(rank_for_energy(spectra, 10.0 / 15.0), 1U);
  EXPECT_EQ(rank_for_energy(spectra, 0.8), 2U);
  EXPECT_EQ(rank_for_energy(spectra, 0.95), 3U);
}

TEST(RankForEnergy, FullFractionStopsWhereNothingIsLeft) {
  EXPECT_EQ(rank_for_energy({{5.0F, 2.0F, 0.0F, 0.0F}}, 1.0), 2U);
  // 1e-6 squared is below double's resolution next to 1e10: the energy no longer grows.
  EXPECT_EQ(rank_for_energy({{1.0e5F, 3.0F, 1.0e-6F, 1.0e-7F}}, 1.0), 2U);
}

TEST(RankForEnergy, ClampsTheFraction) {
  const Spectra spectra = {{3.0F, 2.0F, 1.0F}};
  EXPECT_EQ(rank_for_energy(spectra, 1e-12), 1U);
  EXPECT_EQ(rank_for_energy(spectra, 0.0), 1U);
  EXPECT_EQ(rank_for_energy(spectra, -1.0), 1U);
  EXPECT_EQ(rank_for_energy(spectra, std::numeric_limits<double>::quiet_NaN()), 1U);
  EXPECT_EQ(rank_for_energy(spectra, 2.0), 3U);
}

TEST(RankForEnergy, AllZeroImageNeedsRankOne) {
  EXPECT_EQ(rank_for_energy({{0.0F, 0.0F}, {0.0F, 0.0F}}, 0.99), 1U);
  EXPECT_EQ(rank_for_energy({{0.0F, 0.0F}, {0.0F, 0.0F}}, 1.0), 1U);
}

TEST(RankForEnergy, NoValuesGivesZero) {
  EXPECT_EQ(rank_for_energy({}, 0.5), 0U);
  EXPECT_EQ(rank_for_energy({{}, {}}, 0.5), 0U);
}

TEST(RankForEnergy, AgreesWithRelativeError) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const auto backend = make_cpu_backend({.threads = 0});
  const ImageF32 image = random_image({64, 48, 3}, seed);
  const ImageF32* images[] = {&image};
  const Spectra spectra = backend->decompose(images, 48).front()->all_singular_values();
  for (const double fraction : {0.5, 0.9, 0.99, 0.999}) {
    const uint32_t rank = rank_for_energy(spectra, fraction);
    // Kept energy fraction is 1 - error^2: reached at rank, not at rank - 1.
    EXPECT_GE(1.0 - std::pow(relative_error_at_rank(spectra, rank), 2), fraction - 1e-12);
    if (rank > 1) {
      EXPECT_LT(1.0 - std::pow(relative_error_at_rank(spectra, rank - 1), 2), fraction);
    }
  }
}

}  // namespace
}  // namespace svdserve::test
