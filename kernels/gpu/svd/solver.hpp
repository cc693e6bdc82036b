#pragma once
// Truncated SVD of a batch of same-shaped fp32 matrices on one stream, with cuSOLVER:
//  - gesvdaStridedBatched for the batch: the top `rank` triplets of every matrix in one call.
//    It is approximate by design, so each result is checked: for an exact partial SVD,
//    ||A||_F^2 = sum(S_k^2) + ||A - U_k S_k V_k^T||_F^2 (residual reported by cuSOLVER).
//    gesvda_unchecked skips the redo (the identity errors are still reported), so that the
//    benchmark can measure gesvda's real rank-k error against the check's verdict.
//  - Xgesvd (QR-based, LAPACK's algorithm: singular values accurate to fp32 roundoff of the
//    largest) for any matrix that fails the check, and when asked for explicitly. gesvdj was
//    tried first and measured less accurate on the H100 (largest singular value of photos off by
//    1.5e-4 relative, full-rank reconstructions 3e-5): see docs/performance-log.md.
//  - gesvdj (one-sided Jacobi, economy size) and Xgesvdr (randomized top-k) per matrix, as
//    candidates for large single images; bench/svd_bench.cpp compares them all.
// Xgesvdp is deliberately absent: it returned wrong results on image-like fp32 matrices of 512^2
// and above on the H100.
// Matrices are column-major m x n with m >= n (callers transpose wide/tall as needed).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kernels/gpu/common/cuda_resources.hpp"

namespace svdserve::gpu {

// randomized: our batched randomized SVD (randomized_svd.hpp) for the whole batch; a batch it
// cannot do (rank above its sketch limit, or a failure it reports) is redone with Xgesvd.
// automatic: the server's choice, by measurement on the H100 (docs/PERFORMANCE.md, "Decompose"):
// randomized up to its sketch limit (fastest at every size for max ranks 64 and 128, rank-k error
// within 1.0001x optimal), gesvda_batched above it (full-rank batches pass its check).
enum class SvdMethod {
  automatic,
  gesvda_batched,
  gesvd,
  gesvda_unchecked,
  gesvdj,
  gesvdr,
  randomized
};

class RandomizedSvd;

// Short stable name for logs, tables and JSON ("gesvda_batched", ...).
[[nodiscard]] const char* method_name(SvdMethod method) noexcept;

struct SvdOptions {
  // gesvdj stops when the off-diagonal mass falls below tolerance (relative to ||A||_F) or after
  // max sweeps; a tolerance of 0 keeps cuSOLVER's default (fp32 machine epsilon).
  double gesvdj_tolerance = 0.0;
  int gesvdj_max_sweeps = 100;  // cuSOLVER's default
  // gesvdr samples rank + oversampling random directions (clamped so that the sum is at most n)
  // and runs `iterations` power iterations; empty oversampling means "as many as the rank".
  std::optional<int> gesvdr_oversampling;
  // randomized: extra sketch columns and subspace iterations (RandomizedSvdOptions' defaults).
  int randomized_oversampling = 32;
  int randomized_power_iterations = 4;
  int gesvdr_iterations = 2;
};

struct SvdBatch {
  int m = 0;
  int n = 0;          // m >= n
  int count = 0;
  int rank = 0;       // 1..n
  const float* a = nullptr;  // device: count matrices, stride m*n
  float* u = nullptr;        // device out: count x (m x rank), stride m*rank
  float* s = nullptr;        // device out: count x rank
  float* v = nullptr;        // device out: count x (n x rank), stride n*rank
  // Host: ||A_i||_F^2 of each matrix, for the gesvda residual check (may be empty for the other
  // methods and for gesvda_unchecked, which then reports no identity errors).
  std::span<const double> norms_squared;
};

struct SvdReport {
  int checked = 0;
  int recomputed = 0;  // failed the gesvda check and were redone with Xgesvd
  int failed_check = 0;  // outside kIdentityTolerance (redone unless gesvda_unchecked)
  double worst_identity_error = 0.0;  // max |(sum S^2 + R^2) / ||A||^2 - 1| before redo
  double best_identity_error = 1e300;  // the smallest of them (diagnostics)
  int info_failures = 0;               // gesvda info != 0
  int not_converged = 0;  // gesvdj: stopped at max sweeps above tolerance (results still usable)
};

class GpuSvdSolver {
 public:
  GpuSvdSolver(StreamView stream, cusolverDnHandle_t cusolver, cublasHandle_t cublas);
  ~GpuSvdSolver();
  GpuSvdSolver(const GpuSvdSolver&) = delete;
  GpuSvdSolver& operator=(const GpuSvdSolver&) = delete;

  // Fills u, s, v. Synchronises the stream (info and residuals come back to the host). Throws
  // InternalError naming the matrix when cuSOLVER reports a failure (gesvd non-convergence, a
  // rejected argument).
  SvdReport solve(const SvdBatch& batch, SvdMethod method, const SvdOptions& options = {});

  // Relative tolerance of the residual identity above, for fp32.
  static constexpr double kIdentityTolerance = 2e-5;

 private:
  struct GesvdjInfoDeleter {
    void operator()(gesvdjInfo_t info) const noexcept;
  };

  void solve_gesvda(const SvdBatch& batch, SvdReport& report, std::vector<int>& redo);
  // False when the batch has to go to the exact solver instead (logged in the report).
  bool solve_randomized(const SvdBatch& batch, const SvdOptions& options, SvdReport& report);
  // Per-matrix solvers: each writes its cuSOLVER info to matrix_info_[index] and does not wait.
  void solve_gesvd(const SvdBatch& batch, int index);
  void solve_gesvdj(const SvdBatch& batch, int index, const SvdOptions& options);
  void solve_gesvdr(const SvdBatch& batch, int index, const SvdOptions& options);
  // A per-matrix solver's operands: A_index copied into exact_a_ (the solvers overwrite their
  // input), and U (m x n), S (n), V or VT (n x n) sized as for a full economy SVD.
  struct ExactOperands {
    float* a;
    float* u;
    float* s;
    float* v;
  };
  ExactOperands prepare_exact(const SvdBatch& batch, int index);
  // The leading `rank` columns of U (ld m) and V (ld n, not transposed) and values of S.
  void copy_leading(const SvdBatch& batch, int index, const float* u, const float* s,
                    const float* v);
  // Reads matrix_info_ for `indices` and throws on failures; counts gesvdj non-convergence.
  void check_matrix_info(const SvdBatch& batch, std::span<const int> indices, SvdMethod method,
                         SvdReport& report);

  StreamView stream_;
  cusolverDnHandle_t cusolver_;
  cublasHandle_t cublas_;
  cusolverDnParams_t gesvd_params_ = nullptr;
  std::unique_ptr<gesvdjInfo, GesvdjInfoDeleter> gesvdj_info_;
  std::unique_ptr<RandomizedSvd> randomized_;
  DeviceBuffer work_;
  DeviceBuffer info_;
  DeviceBuffer matrix_info_;  // one int per matrix of the per-matrix solvers
  DeviceBuffer exact_a_;  // Xgesvd, gesvdj and Xgesvdr overwrite their input
  DeviceBuffer exact_u_;
  DeviceBuffer exact_s_;
  DeviceBuffer exact_vt_;  // VT for Xgesvd, V for gesvdj and Xgesvdr
  std::vector<char> host_work_;
  PinnedBuffer info_host_;
};

}  // namespace svdserve::gpu
