#include "server/runtime/rank_validator.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/spectrum.hpp"
#include "test_factors.hpp"

namespace svdserve {
namespace {

const ImageShape kShape{16, 12, 1};  // full rank 12
constexpr uint32_t kDefaultMaxRank = 6;
constexpr uint32_t kMaxRank = 10;

// Spectrum 4, 3, 2, 1 (energy 30) of an image whose energy is `energy`: 0 says "unknown".
class SpectrumFactors final : public Factors {
 public:
  SpectrumFactors(ImageShape shape, double energy)
      : Factors(shape, 4, {{4.0f, 3.0f, 2.0f, 1.0f}}, energy) {}
  [[nodiscard]] std::size_t bytes_resident() const noexcept override { return 1; }
};

template <typename Call>
std::string invalid_argument_message(Call&& call) {
  try {
    call();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument";
  return {};
}

TEST(RankValidator, RankToKeepDefaultsAndCaps) {
  const RankValidator ranks(kDefaultMaxRank, kMaxRank);
  EXPECT_EQ(ranks.rank_to_keep(0), kDefaultMaxRank);
  EXPECT_EQ(ranks.rank_to_keep(1), 1u);
  EXPECT_EQ(ranks.rank_to_keep(kMaxRank), kMaxRank);
  const std::string message = invalid_argument_message([&] { (void)ranks.rank_to_keep(11); });
  EXPECT_EQ(message, "max_rank 11 is above the server's limit of 10");
}

TEST(RankValidator, SelectionIsARankOrAFraction) {
  const RankValidator ranks(kDefaultMaxRank, kMaxRank);
  const RankSelection by_rank = ranks.selection(7, std::nullopt);
  EXPECT_EQ(by_rank.rank, 7u);
  EXPECT_FALSE(by_rank.by_energy());
  // A rank above max_rank is left to the kept factors to refuse (they say how many are kept).
  EXPECT_EQ(ranks.selection(500, std::nullopt).rank, 500u);
  const RankSelection by_energy = ranks.selection(3, 0.9);
  EXPECT_TRUE(by_energy.by_energy());
  EXPECT_DOUBLE_EQ(by_energy.energy_fraction, 0.9);
  EXPECT_EQ(by_energy.rank, 0u) << "exactly one is set";

  EXPECT_NE(invalid_argument_message([&] { (void)ranks.selection(0, std::nullopt); })
                .find("rank must be at least 1"),
            std::string::npos);
  for (double fraction : {0.0, -0.1, 1.5, std::nan("")}) {
    EXPECT_NE(invalid_argument_message([&] { (void)ranks.selection(3, fraction); })
                  .find("energy_fraction must be in (0, 1]"),
              std::string::npos)
        << fraction;
  }
}

TEST(RankValidator, CompressSelectionAlsoCapsTheRank) {
  const RankValidator ranks(kDefaultMaxRank, kMaxRank);
  EXPECT_EQ(ranks.compress_selection(kMaxRank, std::nullopt).rank, kMaxRank);
  EXPECT_EQ(invalid_argument_message([&] { (void)ranks.compress_selection(11, std::nullopt); }),
            "rank 11 is above the server's max_rank of 10");
  EXPECT_TRUE(ranks.compress_selection(0, 0.5).by_energy());
  EXPECT_THROW((void)ranks.compress_selection(0, std::nullopt), InvalidArgument);
}

TEST(RankValidator, RankToDecomposeIsAtMostTheFullRank) {
  EXPECT_EQ(RankValidator::rank_to_decompose({.rank = 12}, kShape), 12u);
  EXPECT_EQ(RankValidator::rank_to_decompose({.energy_fraction = 0.5}, kShape), 12u)
      << "a fraction needs every triplet";
  EXPECT_EQ(invalid_argument_message([] { (void)RankValidator::rank_to_decompose({.rank = 13}, kShape); }),
            "rank 13 is above the image's full rank 12 (the smaller of width and height)");
}

TEST(RankValidator, ResolveAcceptsRanksWithinTheKeptOnes) {
  const auto factors = fakes::make_test_factors({16, 12, 3}, 8, 1);
  EXPECT_EQ(RankValidator::resolve({.rank = 1}, *factors), 1u);
  EXPECT_EQ(RankValidator::resolve({.rank = 8}, *factors), 8u);
  EXPECT_EQ(RankValidator::resolve({.energy_fraction = 1.0}, *factors),
            rank_for_energy(factors->all_singular_values(), 1.0));
  EXPECT_EQ(RankValidator::resolve({.energy_fraction = 0.5}, *factors),
            rank_for_energy(factors->all_singular_values(), 0.5));
}

TEST(RankValidator, ResolveRefusesZeroTooHighAndBadFractions) {
  const auto factors = fakes::make_test_factors({16, 12, 3}, 8, 1);
  EXPECT_THROW((void)RankValidator::resolve({.rank = 0}, *factors), InvalidArgument);
  EXPECT_EQ(invalid_argument_message([&] { (void)RankValidator::resolve({.rank = 9}, *factors); }),
            "rank 9 is above the 8 singular triplets kept for this image; decompose it with a "
            "larger max_rank to go higher");
  for (double fraction : {-0.1, 1.5, std::nan("")}) {
    EXPECT_THROW((void)RankValidator::resolve({.energy_fraction = fraction}, *factors),
                 InvalidArgument)
        << fraction;
  }
}

// Truncated factors measure a fraction against the whole image: 90 % of an image of energy 60
// (54) is more than the four kept values hold (30), so every kept triplet; against the kept
// spectrum alone, 90 % of 30 is reached at rank 3 (16 + 9 + 4 = 29).
TEST(RankValidator, FractionsOfTruncatedFactorsCountTheImagesEnergy) {
  const SpectrumFactors truncated(kShape, 60.0);
  ASSERT_TRUE(against_image_energy(truncated));
  EXPECT_EQ(RankValidator::resolve({.energy_fraction = 0.9}, truncated), 4u);
  const SpectrumFactors complete({4, 4, 1}, 60.0);  // every triplet kept
  ASSERT_FALSE(against_image_energy(complete));
  EXPECT_EQ(RankValidator::resolve({.energy_fraction = 0.9}, complete), 3u);
  const SpectrumFactors unknown_energy(kShape, 0.0);
  EXPECT_FALSE(against_image_energy(unknown_energy));
  EXPECT_EQ(RankValidator::resolve({.energy_fraction = 0.9}, unknown_energy), 3u);
}

}  // namespace
}  // namespace svdserve
