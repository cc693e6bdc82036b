#pragma once
// Batched randomized truncated SVD (Halko, Martinsson, Tropp 2011, algorithm 4.4 + 5.1), built
// for image spectra, which decay slowly: with the default options the rank-k error stays within
// 1.001x of the optimum (RandomizedSvdOptions gives the measurements).
//
// Per batch, every step is one strided-batched call or one kernel launch for all matrices:
//   l = min(rank + oversampling, n);  Omega (n x l) Gaussian, shared by the batch
//   Y = A Omega -> Q = orth(Y);  q times: Z = orth(A^T Q), Q = orth(A Z)
//   B = Q^T A (l x n);  B B^T = W diag(lambda) W^T (Jacobi, float64, one block per matrix)
//   S = sqrt(lambda) (descending, top rank), U = Q W, V = B^T W with unit columns.
// orth is CholeskyQR with the Gram matrix and its Cholesky factor in float64, so it is limited by
// the fp32 product X R^-1 (accuracy ~ u * cond) rather than by cond^2: one pass between power
// iterations, two for the final basis (orthogonal to fp32 roundoff).
// Directions that are numerically absent (rank-deficient input, e.g. a flat image) become zero
// columns of Q; their singular values come out 0 and their U and V columns 0.
//
// Cost per matrix, m = n = 1024, l = 128, q = 3: 8 GEMMs of 2mnl = 2.1 GFLOP (fp32), 8 Gram
// passes of 2ml^2 (fp64 tensor cores) and 8 of 2ml^2 (fp32): ~0.5 GFLOP; Jacobi O(sweeps l^3).
// The fp32 GEMMs should dominate.

#include <cstddef>
#include <cstdint>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/svd/svd_batch.hpp"

namespace svdserve::gpu {

// The stages of a solve, in the order they run (the ortho_* stages and power_gemm repeat).
enum class RsvdStage {
  sketch_gemm,       // Y = A Omega (and Omega itself)
  ortho_widen,       // CholeskyQR: X to float64
  ortho_gram,        // CholeskyQR: X^T X (DGEMM)
  ortho_cholesky,    // CholeskyQR: R and R^-1 (one-block kernel)
  ortho_apply,       // CholeskyQR: X R^-1 (SGEMM)
  power_gemm,        // A^T Q and A Z
  project_gemm,      // B = Q^T A
  eigen_gram,        // B to float64 and B B^T (DGEMM)
  eigen_solve,       // Jacobi on B B^T (one-block kernel)
  factor_gemm,       // U = Q W, V = B^T W, unit columns
  status,            // info copy and the final stream sync
};
inline constexpr std::size_t kRsvdStageCount = static_cast<std::size_t>(RsvdStage::status) + 1;

// Told where a solve is, so that a benchmark can time its stages: started() before the first
// stage is enqueued, finished(stage) once each stage is enqueued on `stream`, solved() after the
// solve's final stream sync.
class RsvdStageObserver {
 public:
  virtual ~RsvdStageObserver() = default;
  virtual void started(StreamView stream) = 0;
  virtual void finished(RsvdStage stage, StreamView stream) = 0;
  virtual void solved() = 0;
};

struct RandomizedSvdOptions {
  // Extra sketch columns beyond the rank, and subspace iterations. Photos, rank 64 (H100):
  //   p32 q4: 1.00006x / 1.0003x the optimal error at 31,100 / 4,500 matrices/s (256^2 / 1024^2)
  //   p64 q3: 1.000003x / 1.00005x at 13,500 / 2,900/s (the one-block kernels grow as l^3)
  //   p32 q2: 1.006x / 1.008x, past 1.001x
  int oversampling = 32;
  int power_iterations = 4;
  // The sketch is never narrower than this (up to n): small ranks get rank 64's accuracy at its
  // cost. l = rank 16 + 32: gradient.png's s_7 2e-4 off, baboon's pixels 2 levels off (H100).
  int min_sketch_columns = 96;
  uint64_t seed = 0x5eed'2024'0b5e'55edULL;
  // Jacobi rotates while |g_pq| > tol sqrt(g_pp g_qq). 1e-14 is float64 noise; the fp32 outputs
  // need the eigenvectors to ~1e-7 only, but 1e-10 saved no time (H100, photos, rank 64).
  double jacobi_tolerance = 1e-14;
  // Benchmarks only (bench/rsvd_stage_timer.hpp). Null: nothing is called.
  RsvdStageObserver* stage_observer = nullptr;
};

class RandomizedSvd {
 public:
  // The widest sketch the one-block kernels hold in shared memory (Cholesky: l^2 doubles; Jacobi:
  // l^2/2 doubles + l^2 floats, ~205 KB at 160). Wider requests are capped here and get one more
  // power iteration to make up for it (randomized_svd.cpp); ranks above it are refused.
  static constexpr int kMaxSketchColumns = 160;

  // cusolver is accepted for interface symmetry with GpuSvdSolver; the solve uses its own kernels
  // (cuSOLVER's batched Cholesky/Jacobi are pointer-array or 32x32-limited).
  RandomizedSvd(StreamView stream, cublasHandle_t cublas, cusolverDnHandle_t cusolver);
  RandomizedSvd(const RandomizedSvd&) = delete;
  RandomizedSvd& operator=(const RandomizedSvd&) = delete;

  // Fills batch.u, batch.s and batch.v (batch.norms_squared is not used). Enqueued on the stream;
  // waits for it once at the end to read the per-matrix status. Throws InvalidArgument for a bad
  // shape or options, InternalError when a matrix holds NaN/Inf or the eigen-solver does not
  // converge (the caller can redo that batch with an exact solver).
  void solve(const SvdBatch& batch, const RandomizedSvdOptions& options);

  // Sketch width solve() uses for this shape:
  // min(max(rank + oversampling, min_sketch_columns), n, kMaxSketchColumns).
  [[nodiscard]] static int sketch_columns(int n, int rank, const RandomizedSvdOptions& options);
  // Subspace iterations solve() runs for this shape: one more than the options' where the sketch
  // is capped below rank + oversampling.
  [[nodiscard]] static int iterations_for(int n, int rank, const RandomizedSvdOptions& options);

 private:
  class StageMarks;  // the observer's calls, or none

  // Replaces x (rows x l per matrix) by an orthonormal basis of its range; x and spare swap.
  void orthonormalise(float*& x, float*& spare, int rows, int l, int count, int passes,
                      const StageMarks& marks);

  StreamView stream_;
  cublasHandle_t cublas_;
  DeviceBuffer omega_;
  DeviceBuffer basis_;        // Y, Q, Z: count x max(m, n) x l
  DeviceBuffer basis_spare_;  // the other side of each X R^-1
  DeviceBuffer basis_double_;
  DeviceBuffer gram_;        // count x l x l, float64
  DeviceBuffer r_inverse_;   // count x l x l
  DeviceBuffer projected_;   // B = Q^T A: count x l x n
  DeviceBuffer projected_double_;
  DeviceBuffer eigenvectors_;  // count x l x rank: the top columns of W
  DeviceBuffer info_;
  PinnedBuffer info_host_;
};

}  // namespace svdserve::gpu
