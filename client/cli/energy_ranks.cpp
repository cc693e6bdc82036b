#include "client/cli/energy_ranks.hpp"

#include <algorithm>
#include <cmath>

#include "client/text_format.hpp"

namespace svdserve::cli {

std::vector<double> cumulative_energy(const ChannelSpectra& spectra) {
  std::size_t longest = 0;
  for (const auto& spectrum : spectra) longest = std::max(longest, spectrum.size());
  std::vector<double> running(longest, 0.0);
  double sum = 0.0;
  for (std::size_t i = 0; i < longest; ++i) {
    for (const auto& spectrum : spectra) {
      if (i < spectrum.size()) sum += static_cast<double>(spectrum[i]) * spectrum[i];
    }
    running[i] = sum;
  }
  for (auto& value : running) value = sum > 0.0 ? value / sum : 1.0;
  return running;
}

std::uint32_t rank_for_energy(std::span<const double> cumulative, double fraction) noexcept {
  for (std::size_t i = 0; i < cumulative.size(); ++i) {
    if (cumulative[i] >= fraction) return static_cast<std::uint32_t>(i + 1);
  }
  return static_cast<std::uint32_t>(cumulative.size());
}

std::string energy_percent_text(double fraction) {
  const double percent = 100.0 * fraction;
  // One decimal at most: the marked fractions need no more.
  const bool whole = std::abs(percent - std::round(percent)) < 1e-9;
  return fixed_text(percent, whole ? 0 : 1) + "%";
}

}  // namespace svdserve::cli
