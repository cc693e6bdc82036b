#pragma once
// How much of an image's energy (sum of squared singular values over all channels) the first k
// singular values keep, and the smallest rank that keeps a given fraction. Only the kept values
// are known to a client, so "total" is their energy: the image's own for a full-rank
// decomposition. A rank is picked as the server's --energy picks it: the smallest k whose share
// reaches the fraction.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace svdserve::cli {

using ChannelSpectra = std::vector<std::vector<float>>;  // One spectrum per channel, largest first.

// The fractions the spectrum plot and command mark.
inline constexpr std::array<double, 3> kMarkedEnergyFractions{0.9, 0.99, 0.999};

// Element k-1: the fraction of the total energy in the first k values of every channel (a
// shorter channel adds nothing past its end). Empty when there are no values; all ones for an
// all-zero image.
[[nodiscard]] std::vector<double> cumulative_energy(const ChannelSpectra& spectra);

// The smallest k whose cumulative energy reaches fraction; 0 when cumulative is empty.
[[nodiscard]] std::uint32_t rank_for_energy(std::span<const double> cumulative, double fraction) noexcept;

// "90%", "99%", "99.9%": a fraction as the plot and the command print it.
[[nodiscard]] std::string energy_percent_text(double fraction);

}  // namespace svdserve::cli
