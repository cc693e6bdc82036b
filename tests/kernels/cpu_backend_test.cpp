// The CPU backend against a float64 LAPACK reference, on fresh random and real images.
//
// Tolerances, and why they hold for a backward-stable fp32 SVD (eps32 = 6e-8):
//  - singular values: |s_i - s_i^64| <= 1e-5 * s_1^64 (absolute errors scale
//    with ||A||_2, not s_i; measured up to 2.2e-6);
//  - f32 reconstruction vs the float64 rank-k approximation of the float64 SVD:
//    ||out - A_k^64||_F <= 1e-4 * ||A_k^64||_F (measured up to 6e-6; A_k is sensitive where
//    s_k ~ s_k+1, as in the flat spectra of random images, hence the margin);
//  - u8 reconstruction: within 1 grey level of the rounded float64 rank-k approximation;
//  - rank-k error of the fp32 factors (evaluated in double) against the optimum of Eckart-Young:
//    ||A - A_k||_F <= 1.001 * ||A - A_k^64||_F + 2e-5 * ||A||_F (the last term is fp32's floor,
//    which matters only where the optimum is ~0, e.g. at full rank; measured up to 5e-6).

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/factors.hpp"
#include "kernels/errors.hpp"
#include "reference_svd.hpp"
#include "test_images.hpp"

namespace svdserve::test {
namespace {

constexpr double kSingularValueTolerance = 1e-5;
constexpr double kReconstructionTolerance = 1e-4;
constexpr double kOptimalErrorRatio = 1.001;
constexpr double kFp32ErrorFloor = 2e-5;
constexpr int kU8Tolerance = 1;
constexpr uint32_t kSmallRanks[] = {1, 5, 16};
constexpr uint32_t kTruncatedRank = 16;
constexpr uint32_t kAllRanks = std::numeric_limits<uint32_t>::max();

// ---------------------------------------------------------------------------------------------
// Inputs

struct ImageCase {
  std::string name;
  std::function<ImageF32(uint64_t seed)> make;
};

ImageF32 real_image(const std::string& file, int imread_flags, bool transpose) {
  cv::Mat mat = read_test_image(file, imread_flags);
  if (transpose) cv::transpose(mat, mat);
  return image_from_mat(mat);
}

std::vector<ImageCase> image_cases() {
  return {
      {"random_wide_grey",
       [](uint64_t seed) {
         return random_image({240, 120, 1}, seed);
       }},
      {"random_tall_colour",
       [](uint64_t seed) {
         return random_image({96, 200, 3}, seed);
       }},
      {"random_square_grey",
       [](uint64_t seed) {
         return random_image({160, 160, 1}, seed);
       }},
      {"home_wide_colour",
       [](uint64_t) { return real_image("home.jpg", cv::IMREAD_UNCHANGED, false); }},
      {"home_wide_grey",
       [](uint64_t) { return real_image("home.jpg", cv::IMREAD_GRAYSCALE, false); }},
      {"pic1_tall_colour",
       [](uint64_t) { return real_image("pic1.png", cv::IMREAD_UNCHANGED, true); }},
      {"gradient_square_rgba",
       [](uint64_t) { return real_image("gradient.png", cv::IMREAD_UNCHANGED, false); }},
      {"butterfly_16bit_colour",
       [](uint64_t seed) {
         const cv::Mat wide =
             to_16_bit_png(read_test_image("butterfly.jpg", cv::IMREAD_UNCHANGED), seed);
         if (wide.depth() != CV_16U) throw std::runtime_error("expected a 16-bit PNG");
         return image_from_mat(wide);
       }},
  };
}

// ---------------------------------------------------------------------------------------------
// Calling the backend

std::shared_ptr<const Factors> decompose_one(Backend& backend, const ImageF32& image,
                                             uint32_t max_rank) {
  const ImageF32* images[] = {&image};
  auto factors = backend.decompose(images, max_rank);
  if (factors.size() != 1) throw std::runtime_error("decompose returned the wrong count");
  return factors.front();
}

// Poisoned with NaN first, so a value the backend skips cannot pass.
std::vector<float> reconstruct_f32(Backend& backend, const Factors& factors, uint32_t rank) {
  std::vector<float> output(factors.shape().values(), std::numeric_limits<float>::quiet_NaN());
  const ReconstructItem item{&factors, rank, OutputPixels::f32,
                             std::as_writable_bytes(std::span(output))};
  backend.reconstruct(std::span(&item, 1));
  return output;
}

std::vector<uint8_t> reconstruct_u8(Backend& backend, const Factors& factors, uint32_t rank,
                                    uint8_t poison) {
  std::vector<uint8_t> output(factors.shape().values(), poison);
  const ReconstructItem item{&factors, rank, OutputPixels::u8,
                             std::as_writable_bytes(std::span(output))};
  backend.reconstruct(std::span(&item, 1));
  return output;
}

// Every byte is a valid u8, so no poison value is detectable; two poisons that give the same
// result show that every byte was written.
std::vector<uint8_t> reconstruct_u8_checked(Backend& backend, const Factors& factors,
                                            uint32_t rank) {
  auto low = reconstruct_u8(backend, factors, rank, 0x00);
  const auto high = reconstruct_u8(backend, factors, rank, 0xFF);
  EXPECT_EQ(low, high) << "some u8 output bytes were not written";
  return low;
}

// Planar channel c, pixel p of an interleaved buffer.
template <class T>
T interleaved_at(const std::vector<T>& output, uint32_t channels, uint32_t channel,
                 std::size_t pixel) {
  return output[pixel * channels + channel];
}

uint8_t rounded_reference(double value) {
  return static_cast<uint8_t>(std::floor(std::clamp(value, 0.0, 255.0) + 0.5));
}

// ---------------------------------------------------------------------------------------------
// Parameterised over images

class CpuBackendImageTest : public ::testing::TestWithParam<ImageCase> {
 protected:
  void SetUp() override {
    seed_ = run_seed() ^ std::hash<std::string>{}(GetParam().name);
    image_ = GetParam().make(seed_);
    backend_ = make_cpu_backend({.threads = 0});
    factors_ = decompose_one(*backend_, image_, kAllRanks);
  }

  [[nodiscard]] const ImageShape& shape() const { return image_.shape; }
  [[nodiscard]] const CpuFactors& cpu_factors() const {
    return dynamic_cast<const CpuFactors&>(*factors_);
  }
  [[nodiscard]] std::vector<uint32_t> ranks_to_check() const {
    std::vector<uint32_t> ranks;
    for (const uint32_t rank : kSmallRanks) {
      if (rank < shape().full_rank()) ranks.push_back(rank);
    }
    ranks.push_back(shape().full_rank());
    return ranks;
  }
  [[nodiscard]] const std::vector<ReferenceSvd>& reference() {
    if (reference_.empty()) {
      for (uint32_t c = 0; c < shape().channels; ++c) {
        reference_.push_back(reference_svd(image_.plane(c), shape().height, shape().width));
      }
    }
    return reference_;
  }

  uint64_t seed_ = 0;
  ImageF32 image_;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<const Factors> factors_;
  std::vector<ReferenceSvd> reference_;
};

TEST_P(CpuBackendImageTest, KeepsEveryTripletWhenMaxRankExceedsFullRank) {
  SCOPED_TRACE(seed_text(seed_));
  EXPECT_EQ(factors_->shape(), shape());
  EXPECT_EQ(factors_->rank_kept(), shape().full_rank());
  EXPECT_EQ(factors_->bytes_resident(), factor_bytes_f32(shape(), shape().full_rank()));
  ASSERT_EQ(factors_->all_singular_values().size(), shape().channels);
  for (uint32_t c = 0; c < shape().channels; ++c) {
    const auto values = factors_->singular_values(c);
    ASSERT_EQ(values.size(), shape().full_rank());
    EXPECT_TRUE(std::is_sorted(values.rbegin(), values.rend())) << "channel " << c;
  }
}

TEST_P(CpuBackendImageTest, SingularValuesMatchFloat64) {
  SCOPED_TRACE(seed_text(seed_));
  for (uint32_t c = 0; c < shape().channels; ++c) {
    const auto& expected = reference()[c].singular_values;
    const auto actual = factors_->singular_values(c);
    const double tolerance = kSingularValueTolerance * expected.front();
    double worst = 0.0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      worst = std::max(worst, std::abs(double{actual[i]} - expected[i]));
    }
    EXPECT_LE(worst, tolerance) << "channel " << c << ", largest singular value "
                                << expected.front();
  }
}

TEST_P(CpuBackendImageTest, ReconstructionMatchesFloat64AtEachRank) {
  SCOPED_TRACE(seed_text(seed_));
  const uint32_t channels = shape().channels;
  for (const uint32_t rank : ranks_to_check()) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const auto f32 = reconstruct_f32(*backend_, *factors_, rank);
    const auto u8 = reconstruct_u8_checked(*backend_, *factors_, rank);
    ASSERT_TRUE(std::ranges::all_of(f32, [](float v) { return std::isfinite(v); }))
        << "some f32 output values were not written";

    double difference_squared = 0.0;
    double reference_squared = 0.0;
    int worst_u8_difference = 0;
    for (uint32_t c = 0; c < channels; ++c) {
      const auto expected = reference_rank_k(reference()[c], rank);
      for (std::size_t p = 0; p < expected.size(); ++p) {
        const double difference = interleaved_at(f32, channels, c, p) - expected[p];
        difference_squared += difference * difference;
        reference_squared += expected[p] * expected[p];
        worst_u8_difference =
            std::max(worst_u8_difference, std::abs(int{interleaved_at(u8, channels, c, p)} -
                                                   int{rounded_reference(expected[p])}));
      }
    }
    EXPECT_LE(std::sqrt(difference_squared),
              kReconstructionTolerance * std::sqrt(reference_squared));
    EXPECT_LE(worst_u8_difference, kU8Tolerance);
  }
}

TEST_P(CpuBackendImageTest, RankKErrorIsNearOptimal) {
  SCOPED_TRACE(seed_text(seed_));
  for (const uint32_t rank : ranks_to_check()) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    double error_squared = 0.0;
    double optimal_squared = 0.0;
    double norm_squared = 0.0;
    for (uint32_t c = 0; c < shape().channels; ++c) {
      const auto approximation = rank_k_from_factors(cpu_factors(), c, rank);
      const std::vector<double> original(image_.plane(c).begin(), image_.plane(c).end());
      error_squared += std::pow(frobenius_distance(original, approximation), 2);
      optimal_squared += std::pow(optimal_error(reference()[c], rank), 2);
      norm_squared += std::pow(frobenius_norm(original), 2);
    }
    EXPECT_LE(std::sqrt(error_squared), kOptimalErrorRatio * std::sqrt(optimal_squared) +
                                            kFp32ErrorFloor * std::sqrt(norm_squared));
  }
}

// A property of the exact solver (the automatic one may solve a truncation differently).
TEST_P(CpuBackendImageTest, ExactTruncationKeepsTheLeadingTriplets) {
  SCOPED_TRACE(seed_text(seed_));
  const uint32_t rank = std::min(kTruncatedRank, shape().full_rank());
  const auto exact = make_cpu_backend({.threads = 0, .svd_method = CpuSvdMethod::exact});
  const auto truncated = decompose_one(*exact, image_, kTruncatedRank);
  EXPECT_EQ(truncated->rank_kept(), rank);
  EXPECT_EQ(truncated->bytes_resident(), factor_bytes_f32(shape(), rank));
  for (uint32_t c = 0; c < shape().channels; ++c) {
    const auto full = factors_->singular_values(c);
    EXPECT_TRUE(std::ranges::equal(truncated->singular_values(c), full.first(rank)))
        << "channel " << c;
  }
  // The same solve, so the rank-k image is bitwise the same whichever rank was kept.
  EXPECT_EQ(reconstruct_f32(*backend_, *truncated, rank),
            reconstruct_f32(*backend_, *factors_, rank));
  EXPECT_EQ(reconstruct_f32(*backend_, *truncated, 1), reconstruct_f32(*backend_, *factors_, 1));
}

INSTANTIATE_TEST_SUITE_P(Images, CpuBackendImageTest, ::testing::ValuesIn(image_cases()),
                         [](const auto& test_info) { return test_info.param.name; });

// ---------------------------------------------------------------------------------------------
// Batches, threads, metadata

TEST(CpuBackendTest, BatchItemsMatchSingleCalls) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const ImageShape shape{72, 56, 3};
  const std::vector<ImageF32> images = {random_image(shape, seed), random_image(shape, seed + 1),
                                        random_image(shape, seed + 2)};
  const auto backend = make_cpu_backend({.threads = 2});
  const ImageF32* pointers[] = {&images[0], &images[1], &images[2]};
  const auto batch = backend->decompose(pointers, 8);
  ASSERT_EQ(batch.size(), images.size());

  // Each item with its own rank and encoding.
  const uint32_t ranks[] = {1, 8, 5};
  std::vector<float> f32_a(shape.values());
  std::vector<uint8_t> u8_b(shape.values());
  std::vector<float> f32_c(shape.values());
  const ReconstructItem items[] = {
      {batch[0].get(), ranks[0], OutputPixels::f32, std::as_writable_bytes(std::span(f32_a))},
      {batch[1].get(), ranks[1], OutputPixels::u8, std::as_writable_bytes(std::span(u8_b))},
      {batch[2].get(), ranks[2], OutputPixels::f32, std::as_writable_bytes(std::span(f32_c))},
  };
  backend->reconstruct(items);

  for (std::size_t i = 0; i < images.size(); ++i) {
    const auto single = decompose_one(*backend, images[i], 8);
    EXPECT_EQ(single->all_singular_values(), batch[i]->all_singular_values()) << "image " << i;
  }
  EXPECT_EQ(f32_a, reconstruct_f32(*backend, *batch[0], ranks[0]));
  EXPECT_EQ(u8_b, reconstruct_u8(*backend, *batch[1], ranks[1], 0));
  EXPECT_EQ(f32_c, reconstruct_f32(*backend, *batch[2], ranks[2]));
}

// The repository's copy: to_host and back gives factors that reconstruct bit for bit the same.
TEST(CpuBackendTest, FactorsCopiedToTheHostAndBackReconstructTheSame) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const ImageShape shape{45, 61, 3};
  const auto backend = make_cpu_backend({.threads = 2});
  const auto original = decompose_one(*backend, random_image(shape, seed), 12);
  const HostFactors host = backend->to_host(*original);
  ASSERT_EQ(host.u.size(), 3u);
  EXPECT_EQ(host.u[0].size(), std::size_t{61} * 12);
  EXPECT_EQ(host.vt[2].size(), std::size_t{12} * 45);
  EXPECT_EQ(host.singular_values, original->all_singular_values());
  const auto copy = backend->from_host(host);
  EXPECT_EQ(copy->energy(), original->energy());
  for (uint32_t rank : {1u, 7u, 12u}) {
    EXPECT_EQ(reconstruct_f32(*backend, *copy, rank), reconstruct_f32(*backend, *original, rank));
  }
}

// The stop check is asked before each plane: an image it stops gets no factors and its
// remaining planes are not computed, while the other images of the batch finish as they would.
TEST(CpuBackendTest, AStoppedImageGetsNoFactorsAndTheOthersFinish) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const ImageShape shape{72, 56, 3};
  const std::vector<ImageF32> images = {random_image(shape, seed), random_image(shape, seed + 1),
                                        random_image(shape, seed + 2)};
  const ImageF32* pointers[] = {&images[0], &images[1], &images[2]};
  constexpr uint32_t kRank = 8;
  const auto backend = make_cpu_backend({.threads = 1});  // one thread: planes in order
  const auto whole = backend->decompose(pointers, kRank);

  std::vector<int> asked(images.size(), 0);
  // Image 1 goes on past its first plane and stops before its second.
  const Backend::StopCheck stop = [&](std::size_t image) {
    return ++asked.at(image) > 1 && image == 1;
  };
  const auto stopped = backend->decompose(pointers, kRank, stop);
  ASSERT_EQ(stopped.size(), images.size());
  EXPECT_EQ(stopped[1], nullptr);
  EXPECT_EQ(asked[1], 2) << "one plane computed, then stopped, its last plane not asked";
  for (const std::size_t i : {0U, 2U}) {
    SCOPED_TRACE("image " + std::to_string(i));
    EXPECT_EQ(asked[i], static_cast<int>(shape.channels)) << "asked before each plane";
    ASSERT_NE(stopped[i], nullptr);
    EXPECT_EQ(stopped[i]->all_singular_values(), whole[i]->all_singular_values());
    const auto& got = dynamic_cast<const CpuFactors&>(*stopped[i]);
    const auto& expected = dynamic_cast<const CpuFactors&>(*whole[i]);
    for (uint32_t c = 0; c < shape.channels; ++c) {
      EXPECT_TRUE(std::ranges::equal(got.channel(c).u, expected.channel(c).u)) << "U " << c;
      EXPECT_TRUE(std::ranges::equal(got.channel(c).vt, expected.channel(c).vt)) << "Vt " << c;
    }
  }
}

TEST(CpuBackendTest, ImagesStoppedFromTheStartAreNotComputedOnAnyThread) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const ImageShape shape{64, 48, 4};
  const std::vector<ImageF32> images = {random_image(shape, seed), random_image(shape, seed + 1)};
  const ImageF32* pointers[] = {&images[0], &images[1]};
  const auto backend = make_cpu_backend({.threads = 2});
  std::atomic<int> asked_for_stopped{0};
  const auto factors = backend->decompose(pointers, 6, [&](std::size_t image) {
    if (image == 0) return false;
    ++asked_for_stopped;
    return true;
  });
  ASSERT_EQ(factors.size(), 2U);
  ASSERT_NE(factors[0], nullptr);
  EXPECT_EQ(factors[0]->rank_kept(), 6U);
  EXPECT_EQ(factors[1], nullptr);
  // Planes already handed to the other thread may ask once each; none is computed.
  EXPECT_GE(asked_for_stopped.load(), 1);
  EXPECT_LE(asked_for_stopped.load(), static_cast<int>(shape.channels));
}

TEST(CpuBackendTest, ConcurrentCallersGetTheSameResults) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const ImageShape shape{128, 96, 3};
  const std::vector<ImageF32> images = {random_image(shape, seed), random_image(shape, seed + 1)};
  const ImageF32* pointers[] = {&images[0], &images[1]};
  constexpr uint32_t kRank = 12;
  const auto backend = make_cpu_backend({.threads = 2});

  struct Result {
    std::vector<std::vector<std::vector<float>>> singular_values;
    std::vector<std::vector<uint8_t>> pixels;
  };
  const auto run_once = [&] {
    Result result;
    for (const auto& factors : backend->decompose(pointers, kRank)) {
      result.singular_values.push_back(factors->all_singular_values());
      result.pixels.push_back(reconstruct_u8(*backend, *factors, kRank / 2, 0));
    }
    return result;
  };
  const Result expected = run_once();

  constexpr int kCallers = 4;
  constexpr int kCallsPerCaller = 3;
  std::atomic<int> mismatches{0};
  std::atomic<int> failures{0};
  {
    std::vector<std::jthread> callers;
    for (int caller = 0; caller < kCallers; ++caller) {
      callers.emplace_back([&] {
        for (int call = 0; call < kCallsPerCaller; ++call) {
          try {
            const Result actual = run_once();
            if (actual.singular_values != expected.singular_values ||
                actual.pixels != expected.pixels) {
              ++mismatches;
            }
          } catch (...) {
            ++failures;
          }
        }
      });
    }
  }
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(failures.load(), 0);
}

TEST(CpuBackendTest, DescribesItself) {
  const auto backend = make_cpu_backend({.threads = 3});
  EXPECT_EQ(backend->name(), "cpu");
  EXPECT_NE(backend->device_description().find("3 worker threads"), std::string::npos)
      << backend->device_description();
  const auto automatic = make_cpu_backend({.threads = 0});
  EXPECT_NE(
      automatic->device_description().find(
          std::to_string(std::max(1U, std::thread::hardware_concurrency())) + " worker threads"),
      std::string::npos)
      << automatic->device_description();
}

TEST(CpuBackendTest, EmptyBatchesAreNoOps) {
  const auto backend = make_cpu_backend({.threads = 1});
  EXPECT_TRUE(backend->decompose(std::span<const DecodedImage* const>{}, 4).empty());
  EXPECT_NO_THROW(backend->reconstruct({}));
}

// ---------------------------------------------------------------------------------------------
// Errors

class CpuBackendErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = random_image({40, 30, 2}, run_seed());
    factors_ = decompose_one(*backend_, image_, 10);
  }

  void reconstruct_with(uint32_t rank, OutputPixels pixels, std::size_t output_bytes,
                        const Factors* factors) {
    std::vector<std::byte> output(output_bytes);
    const ReconstructItem item{factors, rank, pixels, output};
    backend_->reconstruct(std::span(&item, 1));
  }
  [[nodiscard]] std::size_t u8_bytes() const { return image_.shape.values(); }

  std::unique_ptr<Backend> backend_ = make_cpu_backend({.threads = 2});
  ImageF32 image_;
  std::shared_ptr<const Factors> factors_;
};

// Factors that some other backend made.
class ForeignFactors final : public Factors {
 public:
  explicit ForeignFactors(ImageShape shape) : Factors(shape, 1, {{1.0F}}, 1.0) {}
  [[nodiscard]] std::size_t bytes_resident() const noexcept override { return 0; }
};

TEST_F(CpuBackendErrorTest, MaxRankZeroIsInvalid) {
  const ImageF32* images[] = {&image_};
  EXPECT_THROW((void)backend_->decompose(images, 0), InvalidArgument);
}

TEST_F(CpuBackendErrorTest, NonFiniteInputIsInvalid) {
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity()}) {
    ImageF32 poisoned = image_;
    poisoned.plane(1)[17] = bad;
    const ImageF32* images[] = {&image_, &poisoned};
    EXPECT_THROW((void)backend_->decompose(images, 4), InvalidArgument) << bad;
  }
}

TEST_F(CpuBackendErrorTest, SamplesWhoseDecompositionOverflowsAreInvalid) {
  // Finite samples with singular values past float32's 3.4e38: 16 x 16 goes to LAPACK, 256 x 256
  // at rank 8 to the randomized solver.
  std::mt19937 random(7);
  const auto signed_image = [&](uint32_t side, float magnitude) {
    ImageF32 image{{side, side, 1}, std::vector<float>(std::size_t{side} * side)};
    for (float& value : image.planes) value = (random() & 1) ? magnitude : -magnitude;
    return image;
  };
  for (const uint32_t side : {16U, 256U}) {
    const ImageF32 huge = signed_image(side, 3e38F);
    const ImageF32* images[] = {&huge};
    try {
      (void)backend_->decompose(images, 8);
      ADD_FAILURE() << side << "x" << side << " decomposed";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("too large"), std::string::npos) << e.what();
    }
  }
  // Large but representable: decomposed, every singular value finite.
  const ImageF32 large = signed_image(16, 1e30F);
  const ImageF32* images[] = {&large};
  const auto factors = backend_->decompose(images, 8);
  ASSERT_EQ(factors.size(), 1U);
  for (const float value : factors.front()->singular_values(0)) EXPECT_TRUE(std::isfinite(value));
  EXPECT_TRUE(std::isfinite(factors.front()->energy()));
}

TEST_F(CpuBackendErrorTest, MalformedBatchesAreInvalid) {
  ImageF32 other_shape = random_image({30, 40, 2}, 1);
  const ImageF32* mixed[] = {&image_, &other_shape};
  EXPECT_THROW((void)backend_->decompose(mixed, 4), InvalidArgument);

  ImageF32 short_planes = image_;
  short_planes.planes.pop_back();
  const ImageF32* truncated[] = {&short_planes};
  EXPECT_THROW((void)backend_->decompose(truncated, 4), InvalidArgument);

  const ImageF32 empty{{0, 5, 1}, {}};
  const ImageF32* empties[] = {&empty};
  EXPECT_THROW((void)backend_->decompose(empties, 4), InvalidArgument);

  const ImageF32* nulls[] = {&image_, nullptr};
  EXPECT_THROW((void)backend_->decompose(nulls, 4), InvalidArgument);
}

TEST_F(CpuBackendErrorTest, RankOutsideKeptRangeIsInvalid) {
  EXPECT_THROW(reconstruct_with(0, OutputPixels::u8, u8_bytes(), factors_.get()), InvalidArgument);
  EXPECT_THROW(reconstruct_with(11, OutputPixels::u8, u8_bytes(), factors_.get()), InvalidArgument);
  EXPECT_NO_THROW(reconstruct_with(10, OutputPixels::u8, u8_bytes(), factors_.get()));
}

TEST_F(CpuBackendErrorTest, WrongOutputSizeIsInvalid) {
  EXPECT_THROW(reconstruct_with(3, OutputPixels::u8, u8_bytes() - 1, factors_.get()),
               InvalidArgument);
  EXPECT_THROW(reconstruct_with(3, OutputPixels::u8, u8_bytes() + 1, factors_.get()),
               InvalidArgument);
  EXPECT_THROW(reconstruct_with(3, OutputPixels::f32, u8_bytes(), factors_.get()), InvalidArgument);
  EXPECT_NO_THROW(
      reconstruct_with(3, OutputPixels::f32, u8_bytes() * sizeof(float), factors_.get()));
}

TEST_F(CpuBackendErrorTest, FactorsFromElsewhereAreABug) {
  const ForeignFactors foreign(image_.shape);
  EXPECT_THROW(reconstruct_with(1, OutputPixels::u8, u8_bytes(), &foreign), InternalError);
  EXPECT_THROW(reconstruct_with(1, OutputPixels::u8, u8_bytes(), nullptr), InternalError);
}

TEST_F(CpuBackendErrorTest, ABadItemStopsTheBatchBeforeAnyWrite) {
  std::vector<uint8_t> good(u8_bytes(), 0xAB);
  std::vector<uint8_t> bad(u8_bytes());
  const ReconstructItem items[] = {
      {factors_.get(), 2, OutputPixels::u8, std::as_writable_bytes(std::span(good))},
      {factors_.get(), 0, OutputPixels::u8, std::as_writable_bytes(std::span(bad))},
  };
  EXPECT_THROW(backend_->reconstruct(items), InvalidArgument);
  EXPECT_TRUE(std::ranges::all_of(good, [](uint8_t v) { return v == 0xAB; }));
}

TEST_F(CpuBackendErrorTest, ProfilingNeedsTheGpu) {
  EXPECT_THROW(backend_->start_profiling(), FailedPrecondition);
  EXPECT_THROW(backend_->stop_profiling(), FailedPrecondition);
}

}  // namespace
}  // namespace svdserve::test
