#pragma once
// Rank choice and error from singular values alone (Eckart-Young: the best rank-k approximation
// in the Frobenius norm leaves exactly the energy of the dropped singular values).

#include <cstdint>
#include <vector>

namespace svdserve {

using Spectra = std::vector<std::vector<float>>;  // One spectrum per channel, largest first.

// ||A - A_k||_F / ||A||_F over all channels together, in double precision. 0 for an all-zero image.
[[nodiscard]] double relative_error_at_rank(const Spectra& spectra, uint32_t rank) noexcept;

// The smallest k in 1..kept whose kept energy sum_{i<k} S_i^2 (summed over channels) reaches
// fraction of the total. fraction must be in (0, 1].
[[nodiscard]] uint32_t rank_for_energy(const Spectra& spectra, double fraction) noexcept;

}  // namespace svdserve
