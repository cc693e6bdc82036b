#pragma once
// Nominal floating-point operations of one plane's truncated SVD, by solver: what a backend's
// cost estimate (Backend::decompose_seconds_estimate) divides by its rate. Nominal counts are
// the textbook ones; each backend's rate is measured against these same counts, so whatever
// they miss (memory-bound phases, deflation) is in the rate.

#include <cstdint>

namespace svdserve {

// A full thin SVD (U, S and V, every triplet) of a height x width plane, whatever rank is kept
// afterwards: Golub & Van Loan's R-SVD count, 6 m n^2 + 20 n^3 with m >= n.
[[nodiscard]] double exact_svd_flops(uint32_t height, uint32_t width) noexcept;

// The randomized truncated SVD with `sketch` columns, `rank` kept and `power_iterations`
// subspace iterations: 2 (q + 1) products with the plane and its transpose and one projection
// (4 m n l each pair), the orthonormalisations (about 4 (m + n) l^2 per iteration), the
// l x l eigenproblem (about 9 l^3) and the factors (2 (m + n) l k).
[[nodiscard]] double randomized_svd_flops(uint32_t height, uint32_t width, uint32_t sketch,
                                          uint32_t rank, int power_iterations) noexcept;

}  // namespace svdserve
