// The fused CPU reconstruction (tiles of sgemm, vector rounding, interleave) against a float64
// reference on shapes that exercise its edges: widths that are not a whole number of tiles or
// vectors, 1, 3 and 4 channels, rank 1 and every kept rank, tall and wide images.
//
// Tolerances: u8 output equals round_to_u8 of the float64 value exactly, except where that value
// lies within 1e-3 of a rounding boundary (k fp32 products of values near 255 can move it by
// ~k * eps32 * 300 = 6e-4); f32 output is within 1e-5 of the sum of |terms| (fp32 summation of
// k <= 40 terms errs by at most ~k * eps32 of it).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/factors.hpp"
#include "kernels/cpu/reconstruct.hpp"
#include "kernels/pixel_rounding.hpp"

namespace svdserve::test {
namespace {

constexpr double kBoundaryMargin = 1e-3;
constexpr double kF32RelativeTolerance = 1e-5;

struct ShapeCase {
  std::string name;
  ImageShape shape;
  uint32_t rank_kept;
};

// Values spread over about -150..400, so clamping at both ends is exercised as well as rounding.
std::shared_ptr<const CpuFactors> random_factors(const ImageShape& shape, uint32_t rank_kept,
                                                 uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u_values(0.0F, 1.0F);
  std::uniform_real_distribution<float> vt_values(-1.0F, 1.0F);
  std::vector<std::vector<float>> singular_values(shape.channels);
  std::vector<CpuChannelFactors> channels(shape.channels);
  for (uint32_t c = 0; c < shape.channels; ++c) {
    for (uint32_t i = 0; i < rank_kept; ++i) {
      singular_values[c].push_back(300.0F / static_cast<float>(i + 1));
    }
    channels[c].u.resize(std::size_t{shape.height} * rank_kept);
    channels[c].vt.resize(std::size_t{rank_kept} * shape.width);
    for (float& value : channels[c].u) value = u_values(rng);
    for (float& value : channels[c].vt) value = vt_values(rng);
    // A positive first component lifts the mean into the u8 range.
    for (uint32_t column = 0; column < shape.width; ++column) {
      channels[c].vt[column] = 0.4F + 0.5F * u_values(rng);
    }
  }
  return std::make_shared<const CpuFactors>(shape, rank_kept, std::move(singular_values),
                                            std::move(channels), 1.0);
}

struct Reference {
  double value;
  double absolute_sum;  // sum of |terms|: what fp32 summation error scales with
};

Reference reference_at(const CpuFactors& factors, uint32_t rank, uint32_t channel, uint32_t row,
                       uint32_t column) {
  const CpuChannelFactors& f = factors.channel(channel);
  const auto s = factors.singular_values(channel);
  Reference reference{0.0, 0.0};
  for (uint32_t i = 0; i < rank; ++i) {
    const double term = double{f.u[std::size_t{row} * factors.rank_kept() + i]} * s[i] *
                        f.vt[std::size_t{i} * factors.shape().width + column];
    reference.value += term;
    reference.absolute_sum += std::abs(term);
  }
  return reference;
}

bool near_rounding_boundary(double value) {
  const double fraction = value - std::floor(value);
  return std::abs(fraction - 0.5) < kBoundaryMargin;
}

uint8_t rounded_reference(double value) {
  const double clamped = std::clamp(value, 0.0, double{kMaxU8Value});
  return static_cast<uint8_t>(std::floor(clamped + 0.5));
}

class CpuReconstructTest : public ::testing::TestWithParam<ShapeCase> {
 protected:
  void check(const CpuFactors& factors, uint32_t rank) {
    const ImageShape& shape = factors.shape();
    std::vector<uint8_t> u8(shape.values(), 0xA5);
    std::vector<float> f32(shape.values(), std::numeric_limits<float>::quiet_NaN());
    const ReconstructItem items[] = {
        {&factors, rank, OutputPixels::u8, std::as_writable_bytes(std::span(u8))},
        {&factors, rank, OutputPixels::f32, std::as_writable_bytes(std::span(f32))},
    };
    backend_->reconstruct(items);

    std::size_t mismatches = 0;
    std::size_t near_boundary = 0;
    double worst_f32 = 0.0;
    for (uint32_t row = 0; row < shape.height; ++row) {
      for (uint32_t column = 0; column < shape.width; ++column) {
        for (uint32_t channel = 0; channel < shape.channels; ++channel) {
          const std::size_t index =
              (std::size_t{row} * shape.width + column) * shape.channels + channel;
          const Reference reference = reference_at(factors, rank, channel, row, column);
          const double f32_error = std::abs(f32[index] - reference.value) /
                                   std::max(reference.absolute_sum, 1.0);
          worst_f32 = std::max(worst_f32, std::isnan(f32_error) ? 1.0 : f32_error);
          if (near_rounding_boundary(reference.value)) {
            ++near_boundary;
            continue;
          }
          if (u8[index] != rounded_reference(reference.value)) {
            if (mismatches++ == 0) {
              ADD_FAILURE() << "u8 at row " << row << ", column " << column << ", channel "
                            << channel << " is " << int{u8[index]} << "; float64 value "
                            << reference.value;
            }
          }
        }
      }
    }
    EXPECT_EQ(mismatches, 0U) << "of " << shape.values() << " values";
    EXPECT_LT(near_boundary, shape.values() / 100 + 1) << "too few values checked exactly";
    EXPECT_LE(worst_f32, kF32RelativeTolerance);
  }

  // Three workers, so one image is cut into several bands.
  std::unique_ptr<Backend> backend_ = make_cpu_backend({.threads = 3});
};

TEST_P(CpuReconstructTest, MatchesFloat64AtRankOneAndEveryKeptRank) {
  const ShapeCase& c = GetParam();
  const auto factors = random_factors(c.shape, c.rank_kept, 17);
  for (const uint32_t rank : {1U, c.rank_kept}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    check(*factors, rank);
  }
}

// Width and height name columns x rows; widths straddle the 512-column tile and the vectors.
INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuReconstructTest,
    ::testing::Values(ShapeCase{"wide_grey_odd", {1031, 37, 1}, 40},
                      ShapeCase{"tall_rgba_odd", {67, 301, 4}, 9},
                      ShapeCase{"tall_grey_narrow", {5, 260, 1}, 5},
                      ShapeCase{"wide_rgb_one_row_tile_plus_one", {513, 9, 3}, 12},
                      ShapeCase{"single_pixel_rgba", {1, 1, 4}, 1},
                      ShapeCase{"two_channels", {130, 70, 2}, 7}),
    [](const ::testing::TestParamInfo<ShapeCase>& shape_case) { return shape_case.param.name; });

// Rank 1 with U = 1 and S = 1 puts Vt's values in the output unchanged, so the rounding itself
// can be checked on chosen values: NaN, infinities, signed zero, both ends and the boundaries.
TEST(CpuReconstructRoundingTest, RoundsLikeRoundToU8OnEveryLane) {
  const std::vector<float> specials = {
      std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(), -0.0F, 0.0F, 0.49999997F, 0.5F, 0.50000006F,
      1.5F, 2.5F, 127.5F, 254.49998F, 254.5F, 254.99998F, 255.0F, 255.5F, 256.0F, -1.0F,
      -0.5F, 1e30F, -1e30F, std::numeric_limits<float>::denorm_min()};
  // Wide enough for several vectors and a column tile and a half, each lane seeing every value.
  const uint32_t width = 797;
  const ImageShape shape{width, 3, 1};
  std::vector<float> vt(width);
  for (uint32_t column = 0; column < width; ++column) {
    vt[column] = specials[(column * 7 + column / specials.size()) % specials.size()];
  }
  std::vector<CpuChannelFactors> channels(1);
  channels[0].u.assign(shape.height, 1.0F);
  channels[0].vt.assign(vt.begin(), vt.end());
  const CpuFactors factors(shape, 1, {{1.0F}}, std::move(channels), 1.0);

  std::vector<uint8_t> u8(shape.values());
  std::vector<float> f32(shape.values());
  ReconstructWorkspace workspace;
  reconstruct_band(factors, 1, OutputPixels::u8, std::as_writable_bytes(std::span(u8)),
                   RowBand{0, shape.height}, workspace);
  reconstruct_band(factors, 1, OutputPixels::f32, std::as_writable_bytes(std::span(f32)),
                   RowBand{0, shape.height}, workspace);
  for (uint32_t row = 0; row < shape.height; ++row) {
    for (uint32_t column = 0; column < width; ++column) {
      const std::size_t index = std::size_t{row} * width + column;
      EXPECT_EQ(u8[index], round_to_u8(vt[column])) << "value " << vt[column];
      if (!std::isnan(vt[column])) {
        EXPECT_EQ(f32[index], vt[column]);
      }
    }
  }
  SUCCEED() << "instruction set " << reconstruct_instruction_set();
}

}  // namespace
}  // namespace svdserve::test
