// GpuSvdSolver's methods one by one, against float64 LAPACK (dgesdd singular values) on
//  - a batch of three 300x200 matrices with a known spectrum (U, V from QR of Gaussians,
//    sigma_j = 1000 * 0.8^j + 1), so that the per-matrix offsets and a non-square shape are
//    exercised, and
//  - a batch of two real photos (baboon, fruits; grey, 512x512).
// Stated bounds (fp32 factors, float64 checks):
//  - singular values: |s_j - s_ref_j| <= kSigmaTolerance * s_max (randomized on photos:
//    kRandomizedPhotoSigmaTolerance, its values near the rank converge last);
//  - rank-k error ||A - U_k S_k V_k^T||_F <= kErrorRatioBound x the optimal one, at k = rank and
//    k = 5 (randomized on photos, whose spectra decay slowly: kRandomizedPhotoErrorRatioBound);
//    at full rank, where the optimum is 0, <= kFullRankRelativeBound x ||A||_F;
//  - cuSOLVER info: any failure throws from solve().
// Skips in SetUp without a CUDA device; on the GPU machine none may skip.

#include <cblas.h>
#include <gtest/gtest.h>
#include <lapacke.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/svd/solver.hpp"
#include "test_images.hpp"

namespace svdserve::test {
namespace {

constexpr double kSigmaTolerance = 1e-4;
constexpr double kErrorRatioBound = 1.001;
constexpr double kRandomizedPhotoSigmaTolerance = 1e-3;
constexpr double kRandomizedPhotoErrorRatioBound = 1.01;
constexpr double kFullRankRelativeBound = 1e-5;  // where the optimal error is 0
constexpr int kSmallRank = 5;

// Column-major m x n matrices, m >= n.
struct Matrices {
  int m = 0, n = 0;
  std::vector<std::vector<float>> values;
};

// Q (rows x cols, orthonormal columns) of the QR factorisation of a Gaussian matrix.
std::vector<double> random_orthonormal(int rows, int cols, std::mt19937_64& rng) {
  std::normal_distribution<double> gaussian;
  std::vector<double> q(std::size_t(rows) * cols);
  for (double& v : q) v = gaussian(rng);
  std::vector<double> tau(cols);
  EXPECT_EQ(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, rows, cols, q.data(), rows, tau.data()), 0);
  EXPECT_EQ(LAPACKE_dorgqr(LAPACK_COL_MAJOR, rows, cols, cols, q.data(), rows, tau.data()), 0);
  return q;
}

Matrices known_spectrum(uint64_t seed) {
  constexpr int kCount = 3;
  Matrices out{300, 200, {}};
  std::mt19937_64 rng(seed);
  for (int c = 0; c < kCount; ++c) {
    const auto u = random_orthonormal(out.m, out.n, rng);
    const auto v = random_orthonormal(out.n, out.n, rng);
    std::vector<double> us(u);
    for (int j = 0; j < out.n; ++j) {
      const double sigma = 1000.0 * std::pow(0.8, j) + 1.0;
      for (int i = 0; i < out.m; ++i) us[std::size_t(j) * out.m + i] *= sigma;
    }
    std::vector<double> a(std::size_t(out.m) * out.n);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, out.m, out.n, out.n, 1.0, us.data(),
                out.m, v.data(), out.n, 0.0, a.data(), out.m);
    out.values.emplace_back(a.begin(), a.end());
  }
  return out;
}

// Grey photos resized to 512x512; the row-major plane is the column-major matrix as it lies.
Matrices photos() {
  constexpr int kSide = 512;
  Matrices out{kSide, kSide, {}};
  for (const char* name : {"baboon.jpg", "fruits.jpg"}) {
    cv::Mat grey = read_test_image(name, cv::IMREAD_GRAYSCALE), resized, as_float;
    cv::resize(grey, resized, cv::Size(kSide, kSide), 0, 0, cv::INTER_AREA);
    resized.convertTo(as_float, CV_32F);
    out.values.emplace_back(as_float.ptr<float>(0), as_float.ptr<float>(0) + kSide * kSide);
  }
  return out;
}

std::vector<double> reference_sigma(const std::vector<float>& a, int m, int n) {
  std::vector<double> copy(a.begin(), a.end()), sigma(n);
  EXPECT_EQ(LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', m, n, copy.data(), m, sigma.data(), nullptr, 1,
                           nullptr, 1),
            0);
  return sigma;
}

double optimal_error(const std::vector<double>& sigma, int k) {
  double dropped = 0.0;
  for (std::size_t j = k; j < sigma.size(); ++j) dropped += sigma[j] * sigma[j];
  return std::sqrt(dropped);
}

// ||A - U_k S_k V_k^T||_F in float64; U m x rank, V n x rank, column-major.
double rank_k_error(const std::vector<float>& a, int m, int n, const float* u, const float* s,
                    const float* v, int k) {
  std::vector<double> residual(a.begin(), a.end());
  std::vector<double> us(std::size_t(m) * k), vd(v, v + std::size_t(n) * k);
  for (int j = 0; j < k; ++j) {
    for (int i = 0; i < m; ++i) us[std::size_t(j) * m + i] = double(u[std::size_t(j) * m + i]) * s[j];
  }
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, m, n, k, -1.0, us.data(), m, vd.data(), n,
              1.0, residual.data(), m);
  double sum = 0.0;
  for (double r : residual) sum += r * r;
  return std::sqrt(sum);
}

enum class Input { known_spectrum, photos };

struct Case {
  gpu::SvdMethod method;
  Input input;
  int rank;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(gpu::method_name(info.param.method)) +
         (info.param.input == Input::photos ? "_photos" : "_known_spectrum") + "_rank" +
         std::to_string(info.param.rank);
}

class GpuSvdMethodsTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!gpu::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    stream_.emplace();
    cusolver_.emplace(stream_->view());
    cublas_.emplace(stream_->view());
    solver_.emplace(stream_->view(), cusolver_->value(), cublas_->value());
  }

  std::optional<gpu::Stream> stream_;
  std::optional<gpu::CusolverHandle> cusolver_;
  std::optional<gpu::CublasHandle> cublas_;
  std::optional<gpu::GpuSvdSolver> solver_;
};

TEST_P(GpuSvdMethodsTest, MatchesFloat64Lapack) {
  const Case& c = GetParam();
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const Matrices input = c.input == Input::photos ? photos() : known_spectrum(seed);
  const int m = input.m, n = input.n, rank = c.rank;
  const int count = static_cast<int>(input.values.size());

  std::vector<float> packed;
  std::vector<double> norms_squared;
  for (const auto& a : input.values) {
    packed.insert(packed.end(), a.begin(), a.end());
    double sum = 0.0;
    for (float v : a) sum += double(v) * v;
    norms_squared.push_back(sum);
  }
  gpu::DeviceBuffer a_device(packed.size() * sizeof(float));
  gpu::DeviceBuffer u_device(std::size_t(count) * m * rank * sizeof(float));
  gpu::DeviceBuffer s_device(std::size_t(count) * rank * sizeof(float));
  gpu::DeviceBuffer v_device(std::size_t(count) * n * rank * sizeof(float));
  SVDSERVE_CUDA_CHECK(cudaMemcpy(a_device.data(), packed.data(), packed.size() * sizeof(float),
                                 cudaMemcpyHostToDevice));
  gpu::SvdBatch batch{m, n, count, rank, a_device.as<float>(), u_device.as<float>(),
                      s_device.as<float>(), v_device.as<float>(), norms_squared};
  const gpu::SvdReport report = solver_->solve(batch, c.method);
  EXPECT_EQ(report.info_failures, 0);
  if (c.method == gpu::SvdMethod::gesvda_batched) {
    EXPECT_EQ(report.checked, count);
    EXPECT_EQ(report.recomputed, report.failed_check) << "every failed check is redone";
    std::printf("gesvda identity error %.3g..%.3g, %d of %d redone with Xgesvd\n",
                report.best_identity_error, report.worst_identity_error, report.recomputed,
                count);
  }

  std::vector<float> u(std::size_t(count) * m * rank), s(std::size_t(count) * rank),
      v(std::size_t(count) * n * rank);
  SVDSERVE_CUDA_CHECK(cudaMemcpy(u.data(), u_device.data(), u.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost));
  SVDSERVE_CUDA_CHECK(cudaMemcpy(s.data(), s_device.data(), s.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost));
  SVDSERVE_CUDA_CHECK(cudaMemcpy(v.data(), v_device.data(), v.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost));

  // automatic is randomized at these ranks.
  const bool randomized_photo =
      (c.method == gpu::SvdMethod::randomized || c.method == gpu::SvdMethod::automatic) &&
      c.input == Input::photos;
  const double sigma_tolerance =
      randomized_photo ? kRandomizedPhotoSigmaTolerance : kSigmaTolerance;
  const double ratio_bound = randomized_photo ? kRandomizedPhotoErrorRatioBound : kErrorRatioBound;
  for (int i = 0; i < count; ++i) {
    SCOPED_TRACE("matrix " + std::to_string(i));
    const std::vector<double> sigma = reference_sigma(input.values[i], m, n);
    const float* s_i = s.data() + std::size_t(i) * rank;
    for (int j = 0; j < rank; ++j) {
      ASSERT_NEAR(s_i[j], sigma[j], sigma_tolerance * sigma[0]) << "singular value " << j;
    }
    for (int k : {std::min(kSmallRank, rank), rank}) {
      const double error = rank_k_error(input.values[i], m, n, u.data() + std::size_t(i) * m * rank,
                                        s_i, v.data() + std::size_t(i) * n * rank, k);
      const double optimal = optimal_error(sigma, k);
      const double norm = std::sqrt(norms_squared[i]);
      if (optimal > kFullRankRelativeBound * norm) {
        EXPECT_LE(error / optimal, ratio_bound)
            << "k " << k << ": error " << error << ", optimal " << optimal;
      } else {
        EXPECT_LE(error, kFullRankRelativeBound * norm) << "k " << k << " (full rank)";
      }
    }
  }
}

const std::vector<Case> kCases = {
    {gpu::SvdMethod::gesvd, Input::known_spectrum, 16},  // the accurate baseline
    {gpu::SvdMethod::gesvd, Input::known_spectrum, 200},  // full rank
    {gpu::SvdMethod::gesvd, Input::photos, 64},
    {gpu::SvdMethod::gesvda_batched, Input::known_spectrum, 16},
    {gpu::SvdMethod::gesvda_batched, Input::photos, 64},
    {gpu::SvdMethod::randomized, Input::known_spectrum, 16},
    {gpu::SvdMethod::randomized, Input::photos, 64},
    {gpu::SvdMethod::automatic, Input::photos, 64},  // randomized: rank within its sketch
};

INSTANTIATE_TEST_SUITE_P(Methods, GpuSvdMethodsTest, ::testing::ValuesIn(kCases), case_name);

TEST(GpuSvdMethodNames, AreDistinct) {
  EXPECT_STREQ(gpu::method_name(gpu::SvdMethod::automatic), "automatic");
  EXPECT_STREQ(gpu::method_name(gpu::SvdMethod::gesvda_batched), "gesvda_batched");
  EXPECT_STREQ(gpu::method_name(gpu::SvdMethod::gesvd), "gesvd");
  EXPECT_STREQ(gpu::method_name(gpu::SvdMethod::randomized), "randomized");
}

}  // namespace
}  // namespace svdserve::test
