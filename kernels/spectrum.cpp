#include "kernels/spectrum.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace svdserve {
namespace {

[[nodiscard]] std::size_t longest_spectrum(const Spectra& spectra) noexcept {
  std::size_t longest = 0;
  for (const auto& spectrum : spectra) longest = std::max(longest, spectrum.size());
  return longest;
}

// Energy of singular value index i summed over channels; a shorter spectrum contributes zero.
[[nodiscard]] double energy_at(const Spectra& spectra, std::size_t index) noexcept {
  double energy = 0.0;
  for (const auto& spectrum : spectra) {
    if (index < spectrum.size()) {
      const double value = spectrum[index];
      energy += value * value;
    }
  }
  return energy;
}

}  // namespace

// Energy of all kept values, summed in index order (the same order as the loops below, so that
// a running sum reaches it exactly).
[[nodiscard]] static double kept_energy_of(const Spectra& spectra) noexcept {
  double energy = 0.0;
  const std::size_t longest = longest_spectrum(spectra);
  for (std::size_t i = 0; i < longest; ++i) energy += energy_at(spectra, i);
  return energy;
}

double relative_error_at_rank(const Spectra& spectra, uint32_t rank) noexcept {
  return relative_error_at_rank(spectra, rank, kept_energy_of(spectra));
}

uint32_t rank_for_energy(const Spectra& spectra, double fraction) noexcept {
  return rank_for_energy(spectra, fraction, kept_energy_of(spectra));
}

double relative_error_at_rank(const Spectra& spectra, uint32_t rank, double total_energy) noexcept {
  if (!(total_energy > 0.0)) return 0.0;
  // The dropped energy is summed on its own rather than as total - kept, which would cancel
  // catastrophically when the error is small.
  double kept_energy = 0.0;
  double dropped_kept_energy = 0.0;
  const std::size_t longest = longest_spectrum(spectra);
  for (std::size_t i = 0; i < longest; ++i) {
    (i < rank ? kept_energy : dropped_kept_energy) += energy_at(spectra, i);
  }
  // What a truncated decomposition never kept; rounding can make it slightly negative.
  const double untracked = std::max(0.0, total_energy - kept_energy - dropped_kept_energy);
  return std::sqrt(std::min(1.0, (dropped_kept_energy + untracked) / total_energy));
}

uint32_t rank_for_energy(const Spectra& spectra, double fraction, double total_energy) noexcept {
  const std::size_t kept = longest_spectrum(spectra);
  if (kept == 0) return 0;
  // NaN and non-positive fractions ask for as little as possible; above 1 means everything. An
  // all-zero image needs one term.
  if (!(fraction > 0.0) || !(total_energy > 0.0)) return 1;
  const double target_energy = std::min(fraction, 1.0) * total_energy;
  double running_energy = 0.0;
  for (std::size_t i = 0; i < kept; ++i) {
    running_energy += energy_at(spectra, i);
    if (running_energy >= target_energy) return static_cast<uint32_t>(i + 1);
  }
  return static_cast<uint32_t>(kept);
}

}  // namespace svdserve
