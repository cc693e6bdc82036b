#pragma once
// Every rule about ranks, in one place, with the messages users see: how many triplets a
// decomposition keeps, which rank or energy fraction a request may ask for, and which rank that
// is against an image or its kept factors.

#include <cstdint>
#include <optional>

#include "kernels/factors.hpp"
#include "kernels/image.hpp"

namespace svdserve {

// Exactly one is set: a rank, or a fraction of the energy to keep.
struct RankSelection {
  uint32_t rank = 0;
  double energy_fraction = 0.0;

  [[nodiscard]] bool by_energy() const noexcept { return energy_fraction != 0.0; }
};

// Whether energy fractions and errors of these factors are measured against the image's energy
// (a truncated decomposition: what was never kept counts) or the kept spectrum's (every triplet
// kept: exact, where the separately summed energy would only add roundoff).
[[nodiscard]] bool against_image_energy(const Factors& factors) noexcept;

class RankValidator {
 public:
  // default_max_rank: kept when a request names none; max_rank: the most a request may name.
  RankValidator(uint32_t default_max_rank, uint32_t max_rank) noexcept
      : default_max_rank_(default_max_rank), max_rank_(max_rank) {}

  // Decompose, LoadDirectory: the rank to keep, `requested` or the default for 0.
  // InvalidArgument above max_rank.
  [[nodiscard]] uint32_t rank_to_keep(uint32_t requested) const;

  // Reconstruct: a rank of at least 1, or an energy fraction in (0, 1] when one is given.
  [[nodiscard]] RankSelection selection(uint32_t rank, std::optional<double> energy_fraction) const;
  // Compress: as selection(), and a rank of at most max_rank (nothing is kept to check against).
  [[nodiscard]] RankSelection compress_selection(uint32_t rank,
                                                 std::optional<double> energy_fraction) const;

  // Compress, once the image is decoded: the rank to decompose it at (the image's full rank for
  // an energy fraction). InvalidArgument above the full rank.
  [[nodiscard]] static uint32_t rank_to_decompose(const RankSelection& selection,
                                                  const ImageShape& shape);

  // The rank to reconstruct at, from the factors' spectrum for an energy fraction. Checks the
  // selection again (the pipeline takes jobs from any caller): InvalidArgument for rank 0, a rank
  // above the kept triplets, or a fraction outside (0, 1].
  [[nodiscard]] static uint32_t resolve(const RankSelection& selection, const Factors& factors);

 private:
  uint32_t default_max_rank_;
  uint32_t max_rank_;
};

}  // namespace svdserve
