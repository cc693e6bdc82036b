#pragma once
// Truncated SVD of a batch of same-shaped fp32 matrices on one stream, with cuSOLVER:
//  - gesvdaStridedBatched for the batch: the top `rank` triplets of every matrix in one call.
//    It is approximate by design, so each result is checked: for an exact partial SVD,
//    ||A||_F^2 = sum(S_k^2) + ||A - U_k S_k V_k^T||_F^2 (residual reported by cuSOLVER).
//  - Xgesvd (QR-based, LAPACK's algorithm: singular values accurate to fp32 roundoff of the
//    largest) for any matrix that fails the check, and when asked for explicitly. gesvdj was
//    tried first and measured less accurate on the H100 (largest singular value of photos off by
//    1.5e-4 relative, full-rank reconstructions 3e-5): see docs/PERFORMANCE.md.
// Matrices are column-major m x n with m >= n (callers transpose wide/tall as needed).

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/gpu/cuda_resources.hpp"

namespace svdserve::gpu {

enum class SvdMethod { gesvda_batched, gesvd };

struct SvdBatch {
  int m = 0;
  int n = 0;          // m >= n
  int count = 0;
  int rank = 0;       // 1..n
  const float* a = nullptr;  // device: count matrices, stride m*n
  float* u = nullptr;        // device out: count x (m x rank), stride m*rank
  float* s = nullptr;        // device out: count x rank
  float* v = nullptr;        // device out: count x (n x rank), stride n*rank
  // Host: ||A_i||_F^2 of each matrix, for the residual check.
  std::span<const double> norms_squared;
};

struct SvdReport {
  int checked = 0;
  int recomputed = 0;  // failed the gesvda check and were redone with Xgesvd
  double worst_identity_error = 0.0;  // max |(sum S^2 + R^2) / ||A||^2 - 1| before redo
  double best_identity_error = 1e300;  // the smallest of them (diagnostics)
  int info_failures = 0;               // gesvda info != 0
};

class GpuSvdSolver {
 public:
  GpuSvdSolver(StreamView stream, cusolverDnHandle_t cusolver, cublasHandle_t cublas);
  ~GpuSvdSolver();
  GpuSvdSolver(const GpuSvdSolver&) = delete;
  GpuSvdSolver& operator=(const GpuSvdSolver&) = delete;

  // Fills u, s, v. Synchronises the stream (the residuals come back to the host). Throws
  // InternalError naming the matrix when cuSOLVER reports non-convergence.
  SvdReport solve(const SvdBatch& batch, SvdMethod method);

  // Relative tolerance of the residual identity above, for fp32.
  static constexpr double kIdentityTolerance = 2e-5;

 private:
  void solve_gesvda(const SvdBatch& batch, SvdReport& report, std::vector<int>& redo);
  void solve_gesvd(const SvdBatch& batch, int index);

  StreamView stream_;
  cusolverDnHandle_t cusolver_;
  cublasHandle_t cublas_;
  cusolverDnParams_t gesvd_params_ = nullptr;
  DeviceBuffer work_;
  DeviceBuffer info_;
  DeviceBuffer exact_a_;  // Xgesvd overwrites its input
  DeviceBuffer exact_u_;
  DeviceBuffer exact_s_;
  DeviceBuffer exact_vt_;
  std::vector<char> host_work_;
  PinnedBuffer info_host_;
};

}  // namespace svdserve::gpu
