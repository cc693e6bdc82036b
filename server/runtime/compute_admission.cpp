#include "server/runtime/compute_admission.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

[[nodiscard]] std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

// What asks for less compute, by what the request chose.
[[nodiscard]] std::string lower_rank_advice(const Job& job) {
  if (job.kind == JobKind::compress && job.rank_choice.by_energy()) {
    return "ask for a rank instead of energy_fraction (which decomposes at full rank)";
  }
  return job.kind == JobKind::compress ? "ask for a lower rank" : "ask for a lower max_rank";
}

}  // namespace

uint32_t rank_to_compute(const Job& job, const ImageShape& shape) noexcept {
  const uint32_t full_rank = shape.full_rank();
  if (job.kind == JobKind::compress) {
    return job.rank_choice.by_energy() ? full_rank : std::min(job.rank_choice.rank, full_rank);
  }
  return std::min(job.max_rank, full_rank);
}

void admit_compute(const Job& job, const ImageShape& shape, const Backend& backend,
                   std::chrono::milliseconds max_compute) {
  const uint32_t rank = rank_to_compute(job, shape);
  if (rank == 0) return;  // refused later, with the rank's own message
  const double estimate = backend.decompose_seconds_estimate(shape, rank);
  const std::string what = "decomposing a " + std::to_string(shape.width) + "x" +
                           std::to_string(shape.height) + " image at rank " +
                           std::to_string(rank) + " is estimated at " + seconds_text(estimate) +
                           " of compute";
  const double most = std::chrono::duration<double>(max_compute).count();
  if (max_compute.count() > 0 && estimate > most) {
    throw ResourceExhausted(what + ", over the server's max_compute_ms of " +
                            std::to_string(max_compute.count()) + "; " + lower_rank_advice(job) +
                            " or send a smaller image");
  }
  if (job.deadline == Clock::time_point::max()) return;
  const double left = std::chrono::duration<double>(job.deadline - Clock::now()).count();
  if (estimate > left) {
    throw DeadlineExceeded(what + " and the call has " + seconds_text(std::max(left, 0.0)) +
                           " left; allow a longer deadline, " + lower_rank_advice(job) +
                           " or send a smaller image");
  }
}

}  // namespace svdserve
