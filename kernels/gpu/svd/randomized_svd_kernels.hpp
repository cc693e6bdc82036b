#pragma once
// Launchers of the randomized SVD's own kernels (randomized_svd_kernels.cu). Plain C++, so the
// orchestration in randomized_svd.cpp compiles without nvcc. All enqueue on `stream` and check
// the launch; none synchronises.

#include <cstddef>
#include <cstdint>

#include "kernels/gpu/common/cuda_resources.hpp"

namespace svdserve::gpu::rsvd {

// Status bits per matrix, OR-ed into info[matrix] (zero it before the solve).
inline constexpr int kInfoNotFinite = 1;      // a Gram matrix held NaN/Inf: so did the input
inline constexpr int kInfoNoConvergence = 2;  // Jacobi ran out of sweeps

// out[i] ~ N(0, 1), a pure function of (seed, i): counter-based, no state.
void fill_gaussian(float* out, std::size_t count, uint64_t seed, StreamView stream);

void widen_to_double(const float* in, double* out, std::size_t count, StreamView stream);

// For each of `count` l x l SPD Gram matrices G (float64, column-major, stride l*l): the upper
// Cholesky factor G = R^T R and writes R^-1 (l x l, fp32, zero below the diagonal). A pivot at or
// below kPivotTolerance * max diag(G) marks a dependent column: its column of R^-1 is zero.
void cholesky_inverse(const double* gram, float* r_inverse, int l, int count, int* info,
                      StreamView stream);

// For each of `count` l x l symmetric matrices (float64, column-major): eigen-decomposition by
// parallel cyclic Jacobi. Writes the `rank` largest eigenvalues' square roots (clamped at 0),
// descending, to singular_values (stride rank) and their eigenvectors to vectors (l x rank, fp32,
// stride l * rank).
// A pair (p, q) is rotated while |g_pq| > tolerance sqrt(g_pp g_qq).
void jacobi_top_eigenpairs(const double* gram, int l, int rank, double tolerance,
                           float* singular_values, float* vectors, int count, int* info,
                           StreamView stream);

// Scales each column of `count` rows x cols matrices (stride rows*cols) to unit norm; a zero or
// non-finite column becomes zero.
void normalise_columns(float* matrices, int rows, int cols, int count, StreamView stream);

// Bytes of dynamic shared memory the one-block kernels need for sketch width l.
[[nodiscard]] std::size_t cholesky_shared_bytes(int l);
[[nodiscard]] std::size_t jacobi_shared_bytes(int l);

}  // namespace svdserve::gpu::rsvd
