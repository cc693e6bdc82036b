#pragma once
// Admission by compute cost: a decompose or compress whose estimated compute
// (Backend::decompose_seconds_estimate, one worker) is over the server's max_compute_ms, or
// cannot finish before its call's deadline, is refused as soon as its image's size is known
// (from the header, before the image is decoded) instead of holding a worker for minutes.

#include <chrono>
#include <cstdint>

#include "kernels/backend.hpp"
#include "kernels/image.hpp"
#include "server/runtime/job.hpp"

namespace svdserve {

// The rank a job's image is decomposed at: decompose's max rank, compress's rank or, for an
// energy fraction, the image's full rank; never above the full rank.
[[nodiscard]] uint32_t rank_to_compute(const Job& job, const ImageShape& shape) noexcept;

// Throws ResourceExhausted when decomposing an image of `shape` for `job` is estimated over
// max_compute (zero: no limit), else DeadlineExceeded when over the time left before the job's
// deadline. The messages say the estimate and what to change.
void admit_compute(const Job& job, const ImageShape& shape, const Backend& backend,
                   std::chrono::milliseconds max_compute);

}  // namespace svdserve
