#pragma once
// Truncated SVD of a batch of same-shaped fp32 matrices on one stream: the methods the server can
// choose (config.proto's gpu_svd, GpuBackendOptions::svd_method).
//  - randomized: our batched randomized SVD (randomized_svd.hpp) for the whole batch.
//  - gesvda_batched: cuSOLVER's batched approximate SVD with its residual check (gesvda.hpp).
//  - gesvd: cuSOLVER Xgesvd matrix by matrix (QR-based, LAPACK's algorithm: singular values
//    accurate to fp32 roundoff of the largest). It also redoes whatever the other two cannot do:
//    a matrix that fails the gesvda check, a batch that randomized refuses.
// gesvdj is not used: its largest singular value of photos was 1.5e-4 off, Xgesvd's is exact to
// fp32 (H100). Xgesvdp is not used: wrong results on image-like fp32 matrices from 512^2 (H100).

#include <cusolverDn.h>

#include <memory>
#include <span>
#include <vector>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/svd/svd_batch.hpp"

namespace svdserve::gpu {

// automatic: randomized up to its sketch limit (fastest at every size for max ranks 64 and 128,
// rank-k error within 1.0001x optimal), gesvda_batched above it (full-rank batches pass its
// check).
enum class SvdMethod { automatic, gesvda_batched, gesvd, randomized };

class RandomizedSvd;

// Short stable name for logs, tables and JSON ("gesvda_batched", ...).
[[nodiscard]] const char* method_name(SvdMethod method) noexcept;

// The method solve() starts with for a batch of this rank (automatic resolved).
[[nodiscard]] SvdMethod resolved_method(SvdMethod method, int rank) noexcept;

// Nominal flops (kernels/svd_flops.hpp) of solve() on one m x n matrix (m >= n) at `rank`: the
// randomized solver's where it runs, a full SVD's for gesvda and Xgesvd.
[[nodiscard]] double solve_flops(int m, int n, int rank, SvdMethod method) noexcept;

class GpuSvdSolver {
 public:
  GpuSvdSolver(StreamView stream, cusolverDnHandle_t cusolver, cublasHandle_t cublas);
  ~GpuSvdSolver();
  GpuSvdSolver(const GpuSvdSolver&) = delete;
  GpuSvdSolver& operator=(const GpuSvdSolver&) = delete;

  // Fills u, s, v. Synchronises the stream (info and residuals come back to the host). Throws
  // InternalError naming the matrix when cuSOLVER reports a failure (gesvd non-convergence, a
  // rejected argument).
  SvdReport solve(const SvdBatch& batch, SvdMethod method);

 private:
  struct ParamsDeleter {
    using pointer = cusolverDnParams_t;
    void operator()(cusolverDnParams_t params) const noexcept;
  };

  // False when the batch has to go to the exact solver instead.
  bool solve_randomized(const SvdBatch& batch, SvdReport& report);
  // Xgesvd of matrix `index`: writes its cuSOLVER info to matrix_info_[index] and does not wait.
  void solve_gesvd(const SvdBatch& batch, int index);
  // Reads matrix_info_ for `indices` and throws on failures.
  void check_matrix_info(const SvdBatch& batch, std::span<const int> indices);

  StreamView stream_;
  cusolverDnHandle_t cusolver_;
  cublasHandle_t cublas_;
  std::unique_ptr<cusolverDnParams_t, ParamsDeleter> gesvd_params_;
  std::unique_ptr<RandomizedSvd> randomized_;
  DeviceBuffer work_;  // gesvda's and Xgesvd's workspace
  DeviceBuffer info_;
  DeviceBuffer matrix_info_;  // one int per matrix of Xgesvd
  DeviceBuffer exact_a_;      // Xgesvd overwrites its input
  DeviceBuffer exact_u_;
  DeviceBuffer exact_s_;
  DeviceBuffer exact_vt_;
  std::vector<char> host_work_;
  PinnedBuffer info_host_;
};

}  // namespace svdserve::gpu
