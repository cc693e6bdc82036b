// Cumulative energy and the ranks keeping a fraction of it, from known spectra.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "client/cli/energy_ranks.hpp"

namespace svdserve::cli {
namespace {

// Squared values 0.9, 0.09, 0.009, 0.0009, 0.0001: shares 0.9, 0.99, 0.999, 0.9999, 1.
ChannelSpectra nines_spectrum() {
  return {{std::sqrt(0.9F), std::sqrt(0.09F), std::sqrt(0.009F), std::sqrt(0.0009F), std::sqrt(0.0001F)}};
}

TEST(EnergyRanks, CumulativeSharesOfOneChannel) {
  const auto cumulative = cumulative_energy({{3.0F, 2.0F, 1.0F}});  // 9 + 4 + 1 = 14
  ASSERT_EQ(cumulative.size(), 3u);
  EXPECT_DOUBLE_EQ(cumulative[0], 9.0 / 14.0);
  EXPECT_DOUBLE_EQ(cumulative[1], 13.0 / 14.0);
  EXPECT_DOUBLE_EQ(cumulative[2], 1.0);
}

// Channels are summed index by index; a shorter channel adds nothing past its end.
TEST(EnergyRanks, ChannelsSumByRank) {
  const auto cumulative = cumulative_energy({{4.0F, 2.0F}, {2.0F}, {1.0F, 1.0F, 1.0F}});
  // Rank 1: 16 + 4 + 1 = 21; rank 2: + 4 + 1 = 26; rank 3: + 1 = 27.
  ASSERT_EQ(cumulative.size(), 3u);
  EXPECT_DOUBLE_EQ(cumulative[0], 21.0 / 27.0);
  EXPECT_DOUBLE_EQ(cumulative[1], 26.0 / 27.0);
  EXPECT_DOUBLE_EQ(cumulative[2], 1.0);
}

TEST(EnergyRanks, MarkedRanksOfAKnownSpectrum) {
  // Shares 0.8, 0.95, 0.995, 0.9995, 1 -> 90% at k=2, 99% at k=3, 99.9% at k=4.
  const ChannelSpectra spectra = {{std::sqrt(0.8F), std::sqrt(0.15F), std::sqrt(0.045F), std::sqrt(0.0045F),
                                   std::sqrt(0.0005F)}};
  const auto cumulative = cumulative_energy(spectra);
  EXPECT_EQ(rank_for_energy(cumulative, 0.9), 2u);
  EXPECT_EQ(rank_for_energy(cumulative, 0.99), 3u);
  EXPECT_EQ(rank_for_energy(cumulative, 0.999), 4u);
  EXPECT_EQ(rank_for_energy(cumulative, 1.0), 5u);
  EXPECT_EQ(rank_for_energy(cumulative, 0.5), 1u);
}

// A share just below the fraction is not enough; reaching it is.
TEST(EnergyRanks, ReachingTheFractionCounts) {
  const std::vector<double> cumulative = {0.5, 0.8999999, 0.9, 1.0};
  EXPECT_EQ(rank_for_energy(cumulative, 0.9), 3u);
  const auto nines = cumulative_energy(nines_spectrum());
  EXPECT_EQ(rank_for_energy(nines, 0.9999999), 5u);
}

TEST(EnergyRanks, EmptyAndAllZeroSpectra) {
  EXPECT_TRUE(cumulative_energy({}).empty());
  EXPECT_TRUE(cumulative_energy({{}, {}}).empty());
  EXPECT_EQ(rank_for_energy(std::vector<double>{}, 0.9), 0u);
  const auto zeros = cumulative_energy({{0.0F, 0.0F}});
  EXPECT_EQ(rank_for_energy(zeros, 0.999), 1u);
}

TEST(EnergyRanks, PercentText) {
  EXPECT_EQ(energy_percent_text(0.9), "90%");
  EXPECT_EQ(energy_percent_text(0.99), "99%");
  EXPECT_EQ(energy_percent_text(0.999), "99.9%");
}

}  // namespace
}  // namespace svdserve::cli
