#include "server/runtime/rank_validator.hpp"

#include <string>

#include "kernels/errors.hpp"
#include "kernels/spectrum.hpp"

namespace svdserve {
namespace {

void check_energy_fraction(double energy_fraction) {
  if (!(energy_fraction > 0.0 && energy_fraction <= 1.0)) {
    throw InvalidArgument("energy_fraction must be in (0, 1], got " +
                          std::to_string(energy_fraction));
  }
}

void check_rank_given(uint32_t rank) {
  if (rank == 0) throw InvalidArgument("rank must be at least 1 (or give energy_fraction)");
}

uint32_t rank_for_fraction(const Factors& factors, double energy_fraction) {
  return against_image_energy(factors)
             ? rank_for_energy(factors.all_singular_values(), energy_fraction, factors.energy())
             : rank_for_energy(factors.all_singular_values(), energy_fraction);
}

}  // namespace

bool against_image_energy(const Factors& factors) noexcept {
  return factors.rank_kept() < factors.shape().full_rank() && factors.energy() > 0.0;
}

uint32_t RankValidator::rank_to_keep(uint32_t requested) const {
  const uint32_t rank = requested == 0 ? default_max_rank_ : requested;
  if (rank > max_rank_) {
    throw InvalidArgument("max_rank " + std::to_string(rank) + " is above the server's limit of " +
                          std::to_string(max_rank_));
  }
  return rank;
}

RankSelection RankValidator::selection(uint32_t rank, std::optional<double> energy_fraction) const {
  if (energy_fraction) {
    check_energy_fraction(*energy_fraction);
    return {.energy_fraction = *energy_fraction};
  }
  check_rank_given(rank);
  return {.rank = rank};
}

RankSelection RankValidator::compress_selection(uint32_t rank,
                                                std::optional<double> energy_fraction) const {
  const RankSelection chosen = selection(rank, energy_fraction);
  if (chosen.rank > max_rank_) {
    throw InvalidArgument("rank " + std::to_string(chosen.rank) +
                          " is above the server's max_rank of " + std::to_string(max_rank_));
  }
  return chosen;
}

uint32_t RankValidator::rank_to_decompose(const RankSelection& selection, const ImageShape& shape) {
  const uint32_t full_rank = shape.full_rank();
  if (selection.by_energy()) return full_rank;
  if (selection.rank > full_rank) {
    throw InvalidArgument("rank " + std::to_string(selection.rank) +
                          " is above the image's full rank " + std::to_string(full_rank) +
                          " (the smaller of width and height)");
  }
  return selection.rank;
}

uint32_t RankValidator::resolve(const RankSelection& selection, const Factors& factors) {
  if (selection.by_energy()) {
    check_energy_fraction(selection.energy_fraction);
    return rank_for_fraction(factors, selection.energy_fraction);
  }
  check_rank_given(selection.rank);
  if (selection.rank > factors.rank_kept()) {
    throw InvalidArgument("rank " + std::to_string(selection.rank) + " is above the " +
                          std::to_string(factors.rank_kept()) +
                          " singular triplets kept for this image; decompose it with a larger "
                          "max_rank to go higher");
  }
  return selection.rank;
}

}  // namespace svdserve
