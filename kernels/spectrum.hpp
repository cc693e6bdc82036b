#pragma once
// Rank choice and error from singular values alone (Eckart-Young: the best rank-k approximation
// in the Frobenius norm leaves exactly the energy of the dropped singular values).
// Factors keep only rank_kept values per channel; pass the image's total energy ||A||_F^2
// (Factors::energy()) so that a truncated decomposition still gives exact answers. Without it,
// "total" means the energy of the kept values.

#include <cstdint>
#include <vector>

namespace svdserve {

using Spectra = std::vector<std::vector<float>>;  // One spectrum per channel, largest first.

// ||A - A_k||_F / ||A||_F over all channels together, in double precision. 0 for an all-zero image.
[[nodiscard]] double relative_error_at_rank(const Spectra& spectra, uint32_t rank) noexcept;
[[nodiscard]] double relative_error_at_rank(const Spectra& spectra, uint32_t rank,
                                            double total_energy) noexcept;

// The smallest k in 1..kept whose kept energy sum_{i<k} S_i^2 (summed over channels) reaches
// fraction of the total. fraction must be in (0, 1]; smaller (or NaN) gives 1, larger counts as 1.
// An all-zero image gives 1; spectra without any values give 0.
[[nodiscard]] uint32_t rank_for_energy(const Spectra& spectra, double fraction) noexcept;
// As above against the image's total energy; when the kept values cannot reach the fraction,
// the kept rank.
[[nodiscard]] uint32_t rank_for_energy(const Spectra& spectra, double fraction,
                                       double total_energy) noexcept;

}  // namespace svdserve
