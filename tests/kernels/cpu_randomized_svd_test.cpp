// The CPU randomized truncated SVD (kernels/cpu/randomized_svd.hpp) and the policy that picks it
// (kernels/cpu/svd.hpp), against float64 LAPACK dgesdd on random matrices with decaying spectra
// (tall, wide, square) and on real photos.
//
// Tolerances (measured worst in brackets, over several seeds):
//  - rank-k error of the fp32 factors, evaluated in float64, for every k <= rank:
//    ||A - U_k S_k Vt_k||_F <= 1.001 ||A - A_k^64||_F + 2e-5 ||A||_F  [photos 1.00006x, random
//    1.00001x]; the last term is fp32's floor where the optimum is ~0;
//  - singular values: Rayleigh-Ritz values never exceed the true ones; the top half of the kept
//    ones lie within 1e-5 s_1 of float64 [1.2e-6], the rest within 0.5% of their own [5e-4];
//  - orthonormality: |U^T U - I| and |Vt Vt^T - I| <= 5e-6 entrywise [U 2.5e-8 (formed in
//    float64), Vt 4.2e-7].

#include <gtest/gtest.h>
#include <lapacke.h>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/svd.hpp"
#include "kernels/errors.hpp"
#include "test_images.hpp"

namespace svdserve::test {
namespace {

constexpr double kOptimalErrorRatio = 1.001;
constexpr double kFp32ErrorFloor = 2e-5;
constexpr double kTopSingularValueTolerance = 1e-5;   // of s_1
constexpr double kTailSingularValueTolerance = 5e-3;  // of s_i
constexpr double kOrthonormalityTolerance = 5e-6;
constexpr uint32_t kMaxRank = 64;  // the server's default max_rank

struct Plane {
  uint32_t height = 0;
  uint32_t width = 0;
  std::vector<float> values;  // row-major
};

// Float64 singular values (dgesdd, values only), largest first.
std::vector<double> reference_values(const Plane& plane) {
  std::vector<double> a(plane.values.begin(), plane.values.end());
  std::vector<double> values(std::min(plane.height, plane.width));
  const int info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', static_cast<int>(plane.width),
                                  static_cast<int>(plane.height), a.data(),
                                  static_cast<int>(plane.width), values.data(), nullptr, 1,
                                  nullptr, 1);
  if (info != 0) throw std::runtime_error("reference dgesdd failed");
  return values;
}

// An orthonormal height x columns matrix, column-major, from Householder QR of a Gaussian.
std::vector<double> random_orthonormal(uint32_t height, uint32_t columns, std::mt19937_64& rng) {
  std::normal_distribution<double> gaussian;
  std::vector<double> q(std::size_t{height} * columns);
  for (double& value : q) value = gaussian(rng);
  std::vector<double> tau(columns);
  const int h = static_cast<int>(height);
  const int c = static_cast<int>(columns);
  if (LAPACKE_dgeqrf(LAPACK_COL_MAJOR, h, c, q.data(), h, tau.data()) != 0 ||
      LAPACKE_dorgqr(LAPACK_COL_MAJOR, h, c, c, q.data(), h, tau.data()) != 0) {
    throw std::runtime_error("random_orthonormal failed");
  }
  return q;
}

// U diag(s) V^T with random U and V and s_i = 255 decay^i: a photo-like decaying spectrum, with
// values on the 0..255 scale.
Plane decaying_spectrum(uint32_t height, uint32_t width, double decay, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint32_t full = std::min(height, width);
  const auto u = random_orthonormal(height, full, rng);
  const auto v = random_orthonormal(width, full, rng);
  Plane plane{height, width, std::vector<float>(std::size_t{height} * width)};
  std::vector<double> row(width);
  for (uint32_t y = 0; y < height; ++y) {
    std::ranges::fill(row, 0.0);
    for (uint32_t i = 0; i < full; ++i) {
      const double us = u[std::size_t{i} * height + y] * 255.0 * std::pow(decay, i) * 16.0;
      for (uint32_t x = 0; x < width; ++x) row[x] += us * v[std::size_t{i} * width + x];
    }
    std::ranges::copy(row, plane.values.begin() + std::size_t{y} * width);
  }
  return plane;
}

Plane photo_plane(const std::string& file) {
  const ImageF32 image = image_from_mat(read_test_image(file, cv::IMREAD_GRAYSCALE));
  const auto plane = image.plane(0);
  return {image.shape.height, image.shape.width, {plane.begin(), plane.end()}};
}

// The checks every case shares: error at every k <= rank, singular values, orthonormality.
void expect_near_optimal(const Plane& plane, const PlaneSvd& svd, uint32_t rank) {
  const std::vector<double> optimum = reference_values(plane);
  const std::size_t height = plane.height;
  const std::size_t width = plane.width;
  ASSERT_EQ(svd.singular_values.size(), rank);
  ASSERT_EQ(svd.factors.u.size(), height * rank);
  ASSERT_EQ(svd.factors.vt.size(), std::size_t{rank} * width);

  // Rank-k error for every k, the residual kept in float64.
  std::vector<double> residual(plane.values.begin(), plane.values.end());
  double norm_squared = 0.0;
  for (double value : residual) norm_squared += value * value;
  std::vector<double> tail(optimum.size() + 1, 0.0);
  for (std::size_t i = optimum.size(); i-- > 0;) tail[i] = tail[i + 1] + optimum[i] * optimum[i];
  double worst_ratio = 0.0;
  for (uint32_t k = 0; k < rank; ++k) {
    const double s = svd.singular_values[k];
    double error_squared = 0.0;
    for (std::size_t y = 0; y < height; ++y) {
      const double us = s * svd.factors.u[y * rank + k];
      const float* v = svd.factors.vt.data() + std::size_t{k} * width;
      double* row = residual.data() + y * width;
      for (std::size_t x = 0; x < width; ++x) {
        row[x] -= us * v[x];
        error_squared += row[x] * row[x];
      }
    }
    const double optimal = std::sqrt(tail[k + 1]);
    const double error = std::sqrt(error_squared);
    EXPECT_LE(error, kOptimalErrorRatio * optimal + kFp32ErrorFloor * std::sqrt(norm_squared))
        << "rank " << k + 1;
    if (optimal > 0.0) worst_ratio = std::max(worst_ratio, error / optimal);
  }
  ::testing::Test::RecordProperty("worst_error_ratio", std::to_string(worst_ratio));

  const double largest = optimum.front();
  for (uint32_t i = 0; i < rank; ++i) {
    const double value = svd.singular_values[i];
    EXPECT_LE(value, optimum[i] * (1.0 + 1e-5) + 1e-5 * largest) << "s_" << i;
    const double tolerance = i < rank / 2 ? kTopSingularValueTolerance * largest
                                          : kTailSingularValueTolerance * optimum[i];
    EXPECT_NEAR(value, optimum[i], tolerance) << "s_" << i;
  }

  double worst_u = 0.0;
  double worst_v = 0.0;
  for (uint32_t i = 0; i < rank; ++i) {
    for (uint32_t j = 0; j <= i; ++j) {
      double uu = 0.0;
      for (std::size_t y = 0; y < height; ++y) {
        uu += double{svd.factors.u[y * rank + i]} * svd.factors.u[y * rank + j];
      }
      double vv = 0.0;
      const float* vi = svd.factors.vt.data() + std::size_t{i} * width;
      const float* vj = svd.factors.vt.data() + std::size_t{j} * width;
      for (std::size_t x = 0; x < width; ++x) vv += double{vi[x]} * vj[x];
      const double identity = i == j ? 1.0 : 0.0;
      worst_u = std::max(worst_u, std::abs(uu - identity));
      worst_v = std::max(worst_v, std::abs(vv - identity));
    }
  }
  EXPECT_LE(worst_u, kOrthonormalityTolerance);
  EXPECT_LE(worst_v, kOrthonormalityTolerance);
}

// ---------------------------------------------------------------------------------------------
// Random matrices with decaying spectra

struct RandomCase {
  uint32_t height;
  uint32_t width;
  double decay;
  uint32_t rank;
};

class RandomizedSvdRandomTest : public ::testing::TestWithParam<RandomCase> {};

TEST_P(RandomizedSvdRandomTest, IsNearOptimalAtEveryRank) {
  const RandomCase& c = GetParam();
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const Plane plane = decaying_spectrum(c.height, c.width, c.decay, seed);
  RandomizedSvdWorkspace workspace;
  const PlaneSvd svd =
      randomized_svd(plane.values, c.height, c.width, c.rank, RandomizedSvdOptions{}, workspace);
  expect_near_optimal(plane, svd, c.rank);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RandomizedSvdRandomTest,
    ::testing::Values(RandomCase{320, 200, 0.97, 1}, RandomCase{320, 200, 0.97, 16},
                      RandomCase{320, 200, 0.97, 64}, RandomCase{180, 400, 0.98, 16},
                      RandomCase{180, 400, 0.98, 64}, RandomCase{256, 256, 0.99, 64},
                      // Near full rank the sketch is the whole space: exact up to roundoff.
                      RandomCase{160, 120, 0.97, 112}, RandomCase{120, 160, 0.97, 120}),
    [](const auto& test_info) {
      return std::to_string(test_info.param.height) + "x" + std::to_string(test_info.param.width) +
             "_rank" + std::to_string(test_info.param.rank);
    });

// ---------------------------------------------------------------------------------------------
// Real photos

class RandomizedSvdPhotoTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RandomizedSvdPhotoTest, IsNearOptimalAtEveryRankUpToTheDefaultMax) {
  const Plane plane = photo_plane(GetParam());
  RandomizedSvdWorkspace workspace;
  for (const uint32_t rank : {16U, kMaxRank}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const PlaneSvd svd = randomized_svd(plane.values, plane.height, plane.width, rank,
                                        RandomizedSvdOptions{}, workspace);
    expect_near_optimal(plane, svd, rank);
  }
}

INSTANTIATE_TEST_SUITE_P(Photos, RandomizedSvdPhotoTest,
                         ::testing::Values("baboon.jpg", "fruits.jpg", "home.jpg", "pic1.png",
                                           "messi5.jpg"),
                         [](const auto& test_info) {
                           return test_info.param.substr(0, test_info.param.find('.'));
                         });

// ---------------------------------------------------------------------------------------------
// Workspace, degenerate input, the policy

TEST(RandomizedSvdTest, ReusedWorkspaceGivesTheSameBitsAcrossShapes) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const Plane large = decaying_spectrum(300, 260, 0.97, seed);
  const Plane small = decaying_spectrum(130, 150, 0.97, seed + 1);
  RandomizedSvdWorkspace fresh_large;
  RandomizedSvdWorkspace fresh_small;
  RandomizedSvdWorkspace reused;
  const RandomizedSvdOptions options;
  const auto expected_large = randomized_svd(large.values, 300, 260, 40, options, fresh_large);
  const auto expected_small = randomized_svd(small.values, 130, 150, 8, options, fresh_small);
  for (int round = 0; round < 2; ++round) {
    const auto got_large = randomized_svd(large.values, 300, 260, 40, options, reused);
    const auto got_small = randomized_svd(small.values, 130, 150, 8, options, reused);
    EXPECT_EQ(got_large.singular_values, expected_large.singular_values);
    EXPECT_EQ(got_large.factors.u, expected_large.factors.u);
    EXPECT_EQ(got_large.factors.vt, expected_large.factors.vt);
    EXPECT_EQ(got_small.singular_values, expected_small.singular_values);
    EXPECT_EQ(got_small.factors.u, expected_small.factors.u);
  }
}

TEST(RandomizedSvdTest, FlatAndZeroPlanesGiveFiniteFactors) {
  const uint32_t height = 200;
  const uint32_t width = 150;
  RandomizedSvdWorkspace workspace;
  for (const float level : {0.0F, 37.0F}) {
    SCOPED_TRACE("level " + std::to_string(level));
    const std::vector<float> plane(std::size_t{height} * width, level);
    const PlaneSvd svd =
        randomized_svd(plane, height, width, 16, RandomizedSvdOptions{}, workspace);
    const double expected = level * std::sqrt(double{height} * width);  // rank 1
    EXPECT_NEAR(svd.singular_values[0], expected, 1e-5 * std::max(expected, 1.0));
    for (std::size_t i = 1; i < svd.singular_values.size(); ++i) {
      EXPECT_LE(svd.singular_values[i], 1e-5 * std::max(expected, 1.0)) << "s_" << i;
    }
    EXPECT_TRUE(std::ranges::all_of(svd.factors.u, [](float v) { return std::isfinite(v); }));
    EXPECT_TRUE(std::ranges::all_of(svd.factors.vt, [](float v) { return std::isfinite(v); }));
  }
}

TEST(CpuSvdPolicyTest, AutomaticIsRandomizedForSmallRanksAndExactNearFullRank) {
  EXPECT_EQ(choose_svd_engine(CpuSvdMethod::automatic, 1024, 1024, 64), CpuSvdEngine::randomized);
  EXPECT_EQ(choose_svd_engine(CpuSvdMethod::automatic, 512, 384, 16), CpuSvdEngine::randomized);
  EXPECT_EQ(choose_svd_engine(CpuSvdMethod::automatic, 1024, 1024, 1024), CpuSvdEngine::exact);
  EXPECT_EQ(choose_svd_engine(CpuSvdMethod::automatic, 1024, 1024, 600), CpuSvdEngine::exact);
  // A small image: the minimum sketch is already most of it.
  EXPECT_EQ(choose_svd_engine(CpuSvdMethod::automatic, 120, 100, 4), CpuSvdEngine::exact);
  EXPECT_EQ(choose_svd_engine(CpuSvdMethod::exact, 1024, 1024, 64), CpuSvdEngine::exact);
}

TEST(CpuSvdPolicyTest, ExactMethodIsLapackAtEveryRank) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const Plane plane = decaying_spectrum(300, 280, 0.97, seed);
  SvdWorkspace workspace;
  const PlaneSvd exact =
      truncated_svd(plane.values, 300, 280, 32, CpuSvdMethod::exact, workspace);
  ExactSvdWorkspace lapack_workspace;
  const PlaneSvd lapack = exact_svd(plane.values, 300, 280, 32, lapack_workspace);
  EXPECT_EQ(exact.singular_values, lapack.singular_values);
  EXPECT_EQ(exact.factors.u, lapack.factors.u);
  const std::vector<double> reference = reference_values(plane);
  for (uint32_t i = 0; i < 32; ++i) {
    EXPECT_NEAR(exact.singular_values[i], reference[i], 1e-5 * reference[0]) << "s_" << i;
  }
  // Automatic at the same rank runs the randomized solver, and stays near optimal.
  ASSERT_EQ(choose_svd_engine(CpuSvdMethod::automatic, 300, 280, 32), CpuSvdEngine::randomized);
  const PlaneSvd automatic =
      truncated_svd(plane.values, 300, 280, 32, CpuSvdMethod::automatic, workspace);
  expect_near_optimal(plane, automatic, 32);
}

TEST(CpuSvdPolicyTest, TooLargePlanesAreInvalid) {
  SvdWorkspace workspace;
  const uint32_t side = kMaxCpuSvdFullRank + 1;
  EXPECT_THROW((void)truncated_svd({}, side, side, 1, CpuSvdMethod::automatic, workspace),
               InvalidArgument);
}

}  // namespace
}  // namespace svdserve::test
