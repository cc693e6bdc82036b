// The batched randomized SVD (kernels/gpu/svd/randomized_svd) against float64 LAPACK (dgesdd), on
// matrices with a known spectrum and on the real photos (grey, resized), square and m > n,
// ranks 1..128, default options. Skips in SetUp without a CUDA device (CTest label gpu).
//
// Tolerances (fp32 outputs, randomized method):
//  - rank-k error ||A - U S V^T||_F <= 1.001 x the optimal ||A - A_k||_F; when the optimum is
//    below 1e-4 ||A|| (rank-deficient images) fp32 roundoff dominates: <= 2e-5 ||A|| absolute;
//  - singular values: the top 8 within 1e-4 relative; all within 1e-4 s_max + 2e-2 s_i
//    (Ritz values near the cut are underestimated by design; the error bound is what matters);
//  - descending; U columns orthonormal and V columns unit within 1e-4 (columns with s > 1e-6
//    s_max; numerically absent directions may come out as zero columns).
// Outputs are NaN-poisoned before the solve and must hold no NaN afterwards.

#include <gtest/gtest.h>
#include <cblas.h>
#include <cuda_runtime_api.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/svd/randomized_svd.hpp"
#include "reference_svd.hpp"
#include "test_images.hpp"

namespace svdserve::test {
namespace {

constexpr double kMaxErrorRatio = 1.001;
constexpr double kOptimalErrorFloor = 1e-4;   // of ||A||: below, judge absolutely
constexpr double kAbsoluteErrorLimit = 2e-5;  // of ||A||
constexpr double kTopSingularValueTolerance = 1e-4;
constexpr int kTopSingularValues = 8;
constexpr double kSingularValueAbsolute = 1e-4;  // of s_max
constexpr double kSingularValueRelative = 2e-2;
constexpr double kOrthonormalityTolerance = 1e-4;
constexpr double kLiveColumn = 1e-6;  // of s_max
constexpr double kSpectrumScale = 1000.0;  // s_i = scale / (i + 1): a slow, photo-like decay
constexpr uint8_t kNaNByte = 0xFF;

const std::vector<std::string> kPhotos = {"baboon.jpg", "fruits.jpg",   "building.jpg",
                                          "home.jpg",   "messi5.jpg",   "butterfly.jpg",
                                          "aero1.jpg",  "pic1.png",     "gradient.png"};

enum class Source { known_spectrum, photos };

struct Case {
  std::string name;
  Source source;
  int m;
  int n;
  int count;
  int rank;
};

// Row-major m x n, as reference_svd takes it.
using HostMatrix = std::vector<float>;

HostMatrix known_spectrum_matrix(int m, int n, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<float> normal;
  std::vector<float> gaussian(static_cast<std::size_t>(m) * n);
  for (float& value : gaussian) value = normal(engine);
  // The singular vectors of a Gaussian matrix: Haar-random orthonormal U and V.
  const ReferenceSvd basis = reference_svd(gaussian, static_cast<uint32_t>(m),
                                           static_cast<uint32_t>(n));
  std::vector<double> scaled_u(basis.u.size());
  for (int i = 0; i < m; ++i) {
    for (int k = 0; k < n; ++k) {
      scaled_u[static_cast<std::size_t>(i) * n + k] =
          basis.u[static_cast<std::size_t>(i) * n + k] * kSpectrumScale / (k + 1);
    }
  }
  std::vector<double> product(static_cast<std::size_t>(m) * n);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, n, 1.0, scaled_u.data(), n,
              basis.vt.data(), n, 0.0, product.data(), n);
  return {product.begin(), product.end()};
}

HostMatrix photo_matrix(const std::string& file, int m, int n) {
  const cv::Mat grey = read_test_image(file, cv::IMREAD_GRAYSCALE);
  cv::Mat resized;
  cv::resize(grey, resized, cv::Size(n, m), 0, 0, cv::INTER_AREA);
  cv::Mat values;
  resized.convertTo(values, CV_32F);
  return {values.ptr<float>(), values.ptr<float>() + static_cast<std::size_t>(m) * n};
}

struct Outputs {
  std::vector<float> u;
  std::vector<float> s;
  std::vector<float> v;
};

class RandomizedSvdFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    stream_.emplace();
    cublas_.emplace(stream_->view());
    cusolver_.emplace(stream_->view());
  }

  // Column-major upload, NaN-poisoned outputs, solve, download.
  Outputs run(const std::vector<HostMatrix>& matrices, int m, int n, int rank,
              const gpu::RandomizedSvdOptions& options = {}) {
    const auto count = static_cast<int>(matrices.size());
    const std::size_t matrix_values = static_cast<std::size_t>(m) * n;
    std::vector<float> column_major(matrix_values * count);
    for (int b = 0; b < count; ++b) {
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          column_major[b * matrix_values + i + static_cast<std::size_t>(j) * m] =
              matrices[b][static_cast<std::size_t>(i) * n + j];
        }
      }
    }
    Outputs out{std::vector<float>(static_cast<std::size_t>(count) * m * rank),
                std::vector<float>(static_cast<std::size_t>(count) * rank),
                std::vector<float>(static_cast<std::size_t>(count) * n * rank)};
    gpu::DeviceBuffer a(column_major.size() * sizeof(float));
    gpu::DeviceBuffer u(out.u.size() * sizeof(float));
    gpu::DeviceBuffer s(out.s.size() * sizeof(float));
    gpu::DeviceBuffer v(out.v.size() * sizeof(float));
    SVDSERVE_CUDA_CHECK(cudaMemcpy(a.data(), column_major.data(), a.size(),
                                   cudaMemcpyHostToDevice));
    for (const gpu::DeviceBuffer* buffer : {&u, &s, &v}) {
      SVDSERVE_CUDA_CHECK(cudaMemset(buffer->data(), kNaNByte, buffer->size()));
    }
    gpu::SvdBatch batch;
    batch.m = m;
    batch.n = n;
    batch.count = count;
    batch.rank = rank;
    batch.a = a.as<float>();
    batch.u = u.as<float>();
    batch.s = s.as<float>();
    batch.v = v.as<float>();
    gpu::RandomizedSvd solver(stream_->view(), cublas_->value(), cusolver_->value());
    solver.solve(batch, options);
    SVDSERVE_CUDA_CHECK(cudaMemcpy(out.u.data(), u.data(), u.size(), cudaMemcpyDeviceToHost));
    SVDSERVE_CUDA_CHECK(cudaMemcpy(out.s.data(), s.data(), s.size(), cudaMemcpyDeviceToHost));
    SVDSERVE_CUDA_CHECK(cudaMemcpy(out.v.data(), v.data(), v.size(), cudaMemcpyDeviceToHost));
    return out;
  }

  std::optional<gpu::Stream> stream_;
  std::optional<gpu::CublasHandle> cublas_;
  std::optional<gpu::CusolverHandle> cusolver_;
};

class GpuRandomizedSvdTest : public RandomizedSvdFixture,
                             public ::testing::WithParamInterface<Case> {};

// Checks one matrix b of the batch against its float64 reference.
void check_matrix(const HostMatrix& plane, const Outputs& out, int b, int m, int n, int rank) {
  const ReferenceSvd reference =
      reference_svd(plane, static_cast<uint32_t>(m), static_cast<uint32_t>(n));
  const float* u = out.u.data() + static_cast<std::size_t>(b) * m * rank;
  const float* s = out.s.data() + static_cast<std::size_t>(b) * rank;
  const float* v = out.v.data() + static_cast<std::size_t>(b) * n * rank;
  for (std::size_t i = 0; i < static_cast<std::size_t>(m) * rank; ++i) {
    ASSERT_TRUE(std::isfinite(u[i])) << "U value " << i << " unwritten or not finite";
  }
  for (std::size_t i = 0; i < static_cast<std::size_t>(n) * rank; ++i) {
    ASSERT_TRUE(std::isfinite(v[i])) << "V value " << i << " unwritten or not finite";
  }
  const double s_max = reference.singular_values[0];
  for (int k = 0; k < rank; ++k) {
    ASSERT_TRUE(std::isfinite(s[k])) << "S value " << k << " unwritten or not finite";
    if (k > 0) {
      EXPECT_LE(s[k], s[k - 1]) << "not descending at " << k;
    }
    const double expected = reference.singular_values[k];
    const double difference = std::abs(s[k] - expected);
    if (k < kTopSingularValues && expected > kLiveColumn * s_max) {
      EXPECT_LE(difference, kTopSingularValueTolerance * expected) << "s_" << k;
    }
    EXPECT_LE(difference, kSingularValueAbsolute * s_max + kSingularValueRelative * expected)
        << "s_" << k;
  }

  // Orthonormality of the columns that carry signal.
  double worst_u = 0.0;
  double worst_v = 0.0;
  for (int a = 0; a < rank; ++a) {
    if (s[a] <= kLiveColumn * s_max) continue;
    for (int c = a; c < rank; ++c) {
      if (s[c] <= kLiveColumn * s_max) continue;
      double dot_u = 0.0;
      for (int i = 0; i < m; ++i) {
        dot_u += double{u[i + static_cast<std::size_t>(a) * m]} * u[i + static_cast<std::size_t>(c) * m];
      }
      worst_u = std::max(worst_u, std::abs(dot_u - (a == c ? 1.0 : 0.0)));
    }
    double norm_v = 0.0;
    for (int j = 0; j < n; ++j) norm_v += double{v[j + static_cast<std::size_t>(a) * n]} * v[j + static_cast<std::size_t>(a) * n];
    worst_v = std::max(worst_v, std::abs(std::sqrt(norm_v) - 1.0));
  }
  EXPECT_LE(worst_u, kOrthonormalityTolerance) << "U^T U - I";
  EXPECT_LE(worst_v, kOrthonormalityTolerance) << "V column norms";

  // Rank-k error in float64: U diag(S) V^T against A.
  std::vector<double> scaled_u(static_cast<std::size_t>(m) * rank);
  std::vector<double> v_double(static_cast<std::size_t>(n) * rank);
  for (int k = 0; k < rank; ++k) {
    for (int i = 0; i < m; ++i) {
      scaled_u[i + static_cast<std::size_t>(k) * m] = double{u[i + static_cast<std::size_t>(k) * m]} * s[k];
    }
    for (int j = 0; j < n; ++j) {
      v_double[j + static_cast<std::size_t>(k) * n] = v[j + static_cast<std::size_t>(k) * n];
    }
  }
  std::vector<double> approximation(static_cast<std::size_t>(m) * n);  // column-major
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, m, n, rank, 1.0, scaled_u.data(), m,
              v_double.data(), n, 0.0, approximation.data(), m);
  double error_squared = 0.0;
  double norm_squared = 0.0;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const double value = plane[static_cast<std::size_t>(i) * n + j];
      const double difference = value - approximation[i + static_cast<std::size_t>(j) * m];
      error_squared += difference * difference;
      norm_squared += value * value;
    }
  }
  const double error = std::sqrt(error_squared);
  const double norm = std::sqrt(norm_squared);
  const double optimal = optimal_error(reference, static_cast<uint32_t>(rank));
  if (optimal > kOptimalErrorFloor * norm) {
    EXPECT_LE(error / optimal, kMaxErrorRatio)
        << "rank-" << rank << " error " << error << " vs optimal " << optimal;
  } else {
    EXPECT_LE(error, kAbsoluteErrorLimit * norm) << "rank-deficient case, optimal " << optimal;
  }
  std::printf("  matrix %d: error ratio %.6f, s_0 rel %.2e\n", b,
              optimal > 0 ? error / optimal : 0.0,
              std::abs(s[0] - s_max) / s_max);
}

TEST_P(GpuRandomizedSvdTest, MatchesFloat64Lapack) {
  const Case& c = GetParam();
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  std::vector<HostMatrix> matrices;
  for (int b = 0; b < c.count; ++b) {
    matrices.push_back(c.source == Source::known_spectrum
                           ? known_spectrum_matrix(c.m, c.n, seed + b)
                           : photo_matrix(kPhotos[b % kPhotos.size()], c.m, c.n));
  }
  const Outputs out = run(matrices, c.m, c.n, c.rank);
  for (int b = 0; b < c.count; ++b) {
    SCOPED_TRACE("matrix " + std::to_string(b) +
                 (c.source == Source::photos ? " (" + kPhotos[b % kPhotos.size()] + ")" : ""));
    check_matrix(matrices[b], out, b, c.m, c.n, c.rank);
  }
}

const Case kCases[] = {
    {"spectrum_256x256_r1", Source::known_spectrum, 256, 256, 3, 1},
    {"spectrum_256x256_r16", Source::known_spectrum, 256, 256, 3, 16},
    {"spectrum_256x256_r64", Source::known_spectrum, 256, 256, 3, 64},
    {"spectrum_256x256_r128", Source::known_spectrum, 256, 256, 3, 128},
    {"spectrum_384x256_r64", Source::known_spectrum, 384, 256, 3, 64},
    {"spectrum_384x256_r128", Source::known_spectrum, 384, 256, 3, 128},
    {"photos_256x256_r1", Source::photos, 256, 256, 9, 1},
    {"photos_256x256_r16", Source::photos, 256, 256, 9, 16},
    {"photos_256x256_r64", Source::photos, 256, 256, 9, 64},
    {"photos_256x256_r128", Source::photos, 256, 256, 9, 128},
    {"photos_384x256_r64", Source::photos, 384, 256, 5, 64},
    {"photos_1024x1024_r64", Source::photos, 1024, 1024, 4, 64},
    {"photos_1024x1024_r128", Source::photos, 1024, 1024, 3, 128},
};

std::string case_name(const ::testing::TestParamInfo<Case>& param_info) {
  return param_info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuRandomizedSvdTest, ::testing::ValuesIn(kCases), case_name);

// The non-default options that svdserve_rsvd_bench compares (--variant): each must keep the
// same accuracy on the photos before it can become a default.
struct OptionsCase {
  std::string name;
  int oversampling;
  int power_iterations;
  double jacobi_tolerance;
  int side;
  int rank;
};

class GpuRandomizedSvdOptionsTest : public RandomizedSvdFixture,
                                    public ::testing::WithParamInterface<OptionsCase> {};

TEST_P(GpuRandomizedSvdOptionsTest, PhotosMatchFloat64Lapack) {
  const OptionsCase& c = GetParam();
  const int kPhotoCount = c.side >= 1024 ? 4 : 9;  // the float64 reference dominates at 1024^2
  std::vector<HostMatrix> matrices;
  for (int b = 0; b < kPhotoCount; ++b) {
    matrices.push_back(photo_matrix(kPhotos[b % kPhotos.size()], c.side, c.side));
  }
  gpu::RandomizedSvdOptions options;
  options.oversampling = c.oversampling;
  options.power_iterations = c.power_iterations;
  options.jacobi_tolerance = c.jacobi_tolerance;
  const Outputs out = run(matrices, c.side, c.side, c.rank, options);
  for (int b = 0; b < kPhotoCount; ++b) {
    SCOPED_TRACE("matrix " + std::to_string(b) + " (" + kPhotos[b % kPhotos.size()] + ")");
    check_matrix(matrices[b], out, b, c.side, c.side, c.rank);
  }
}

const OptionsCase kOptionsCases[] = {
    {"p64q3_256_r64", 64, 3, 1e-14, 256, 64},
    {"p64q3_256_r128", 64, 3, 1e-14, 256, 128},
    {"p32q4_256_r64", 32, 4, 1e-14, 256, 64},
    {"p48q3_256_r64", 48, 3, 1e-14, 256, 64},
    {"p64q3_tol10_256_r64", 64, 3, 1e-10, 256, 64},
    {"p32q4_tol10_256_r64", 32, 4, 1e-10, 256, 64},
    {"p64q3_1024_r64", 64, 3, 1e-14, 1024, 64},
};

std::string options_case_name(const ::testing::TestParamInfo<OptionsCase>& param_info) {
  return param_info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Options, GpuRandomizedSvdOptionsTest,
                         ::testing::ValuesIn(kOptionsCases), options_case_name);

// Records what a solve tells its stage observer (RandomizedSvdOptions::stage_observer).
class RecordingObserver final : public gpu::RsvdStageObserver {
 public:
  void started(gpu::StreamView stream) override {
    events.push_back("started");
    streams.push_back(stream.value());
  }
  void finished(gpu::RsvdStage stage, gpu::StreamView stream) override {
    events.push_back("finished");
    stages.push_back(stage);
    streams.push_back(stream.value());
  }
  void solved() override { events.push_back("solved"); }

  std::vector<std::string> events;
  std::vector<gpu::RsvdStage> stages;
  std::vector<cudaStream_t> streams;
};

TEST_F(GpuRandomizedSvdTest, StageObserverSeesEveryStageOfASolveInOrder) {
  const std::vector<HostMatrix> matrices(2, photo_matrix("baboon.jpg", 256, 256));
  RecordingObserver observer;
  gpu::RandomizedSvdOptions options;
  options.stage_observer = &observer;
  const Outputs out = run(matrices, 256, 256, 16, options);
  check_matrix(matrices[0], out, 0, 256, 256, 16);  // observing changes nothing

  ASSERT_GE(observer.events.size(), 3U);
  EXPECT_EQ(observer.events.front(), "started");
  EXPECT_EQ(observer.events.back(), "solved");
  EXPECT_EQ(std::count(observer.events.begin(), observer.events.end(), "started"), 1);
  EXPECT_EQ(std::count(observer.events.begin(), observer.events.end(), "solved"), 1);
  ASSERT_FALSE(observer.stages.empty());
  EXPECT_EQ(observer.stages.front(), gpu::RsvdStage::sketch_gemm);
  EXPECT_EQ(observer.stages.back(), gpu::RsvdStage::status);
  for (std::size_t i = 0; i < gpu::kRsvdStageCount; ++i) {
    const auto stage = static_cast<gpu::RsvdStage>(i);
    EXPECT_NE(std::find(observer.stages.begin(), observer.stages.end(), stage),
              observer.stages.end())
        << "stage " << i << " never finished";
  }
  for (const cudaStream_t stream : observer.streams) EXPECT_EQ(stream, stream_->view().value());
}

TEST_F(GpuRandomizedSvdTest, FlatImageGivesExactRankOneAndZeros) {
  constexpr int kSide = 64;
  constexpr float kGrey = 117.0F;
  const std::vector<HostMatrix> flat(2, HostMatrix(kSide * kSide, kGrey));
  const Outputs out = run(flat, kSide, kSide, 8);
  for (int b = 0; b < 2; ++b) check_matrix(flat[b], out, b, kSide, kSide, 8);
}

TEST_F(GpuRandomizedSvdTest, NonFiniteInputThrowsInternalError) {
  constexpr int kSide = 64;
  std::vector<HostMatrix> matrices(2, photo_matrix("baboon.jpg", kSide, kSide));
  matrices[1][5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW((void)run(matrices, kSide, kSide, 8), InternalError);
}

TEST_F(GpuRandomizedSvdTest, RankAboveTheSketchCapIsInvalidArgument) {
  constexpr int kSide = 256;
  const std::vector<HostMatrix> matrices(1, photo_matrix("baboon.jpg", kSide, kSide));
  EXPECT_THROW((void)run(matrices, kSide, kSide, gpu::RandomizedSvd::kMaxSketchColumns + 1),
               InvalidArgument);
}

}  // namespace
}  // namespace svdserve::test
