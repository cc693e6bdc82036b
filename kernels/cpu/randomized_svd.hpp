#pragma once
// Randomized truncated SVD of one plane (Halko, Martinsson, Tropp 2011, algorithms 4.4 and 5.1),
// the CPU twin of kernels/gpu/svd/randomized_svd.hpp: its cost follows the rank kept, not the
// image. With M the plane and l = max(rank + oversampling, min_sketch_columns) <= min(h, w):
//   Omega Gaussian (l columns);  Q = orth(M Omega);  q times: Z = orth(M^T Q), Q = orth(M Z)
//   B = Q^T M (l x h);  B B^T = W diag(lambda) W^T (float64, dsyevd);  left = Q W_k,
//   right = B^T W_k with unit columns (float64), S their norms.
// Every large product is one single-threaded cblas_sgemm. orth is CholeskyQR (float64 Gram)
// between iterations and Householder QR (sgeqrf + sorgqr) for the final Q, which keeps it
// orthonormal to fp32 roundoff even where the sketch is rank-deficient (a flat image). The Gram route costs a tenth of sgesdd on B (1024 wide, l 96: 1.5 vs 14.5 ms) and,
// in float64, loses nothing against fp32 B. A direction absent from the plane (exactly zero)
// comes out with singular value 0 and zero vectors.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/aligned_vector.hpp"
#include "kernels/cpu/plane_svd.hpp"

namespace svdserve {

struct RandomizedSvdOptions {
  // Sketch columns beyond the rank, and subspace iterations. Worst rank-k error / optimum over
  // k <= 64 on 12 photos' planes at 512^2 (1024^2 upscaled ones are easier), one core:
  //   p64 q3: 1.0004x in 64 ms/plane;  p64 q4: 1.00008x, 84 ms;  p32 q4: 1.0010x, 53 ms (fails)
  int oversampling = 64;
  int power_iterations = 3;
  // Small ranks get at least this sketch (rank 32's), for little extra cost over their own.
  int min_sketch_columns = 96;
  uint64_t seed = 0x5eed'2024'0c9a'55edULL;
};

// Scratch one worker reuses for every plane: it grows to the largest shape seen, and the sketch
// is drawn again only when its shape changes, so warm calls allocate nothing but their results.
struct RandomizedSvdWorkspace {
  AlignedVector<float> omega;         // height x l, column-major
  uint32_t omega_rows = 0;
  uint32_t omega_columns = 0;
  uint64_t omega_seed = 0;
  AlignedVector<float> basis;         // width x l: Q
  AlignedVector<float> cobasis;       // height x l: Z
  AlignedVector<float> projected;             // l x height: B = Q^T M
  AlignedVector<double> projected_double;     // the same in float64
  AlignedVector<double> gram;                 // l x l: B B^T, then its eigenvectors W
  AlignedVector<double> eigenvalues;          // l, ascending
  AlignedVector<float> top_vectors;           // l x rank: W_k, largest first
  AlignedVector<double> right_vectors;        // rank x height: W_k^T B, smallest first
  AlignedVector<double> norms;                // rank
  AlignedVector<float> tau;                   // l
  AlignedVector<double> basis_double;         // max(h, w) x l: CholeskyQR's float64 copy
  AlignedVector<float> r_factor;              // l x l: its Cholesky factor
  AlignedVector<float> work;
  AlignedVector<double> double_work;
  std::vector<int> integer_work;
};

// Sketch columns for `rank` of a height x width plane (capped at min(h, w)).
[[nodiscard]] uint32_t sketch_columns(uint32_t height, uint32_t width, uint32_t rank,
                                      const RandomizedSvdOptions& options) noexcept;

// The approximate top `rank` singular triplets of the finite row-major height x width plane;
// rank is in 1..min(height, width) and the shape within kMaxCpuSvdFullRank (svd.hpp checks both).
// Throws InternalError when LAPACK fails.
[[nodiscard]] PlaneSvd randomized_svd(std::span<const float> plane, uint32_t height,
                                      uint32_t width, uint32_t rank,
                                      const RandomizedSvdOptions& options,
                                      RandomizedSvdWorkspace& workspace);

}  // namespace svdserve
