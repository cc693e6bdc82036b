#pragma once
// Every GPU SVD method svdserve_svd_bench compares: the server's own (gpu::GpuSvdSolver) and the
// cuSOLVER candidates it was measured against and does not use:
//  - gesvda_unchecked: gesvda_batched without the exact redo, so that gesvda's own rank-k error
//    can be set against its check's verdict;
//  - gesvdj: one-sided Jacobi (cusolverDnSgesvdj), economy size, one matrix at a time;
//  - gesvdr: randomized top-k (cusolverDnXgesvdr), one matrix at a time: samples the range of A
//    with rank + p random vectors, sharpens it with power iterations and solves the small
//    projected problem. Cheap when rank << n; its accuracy depends on the spectrum's decay.

#include <cublas_v2.h>
#include <cusolverDn.h>

#include <memory>
#include <optional>
#include <vector>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/svd/solver.hpp"
#include "kernels/gpu/svd/svd_batch.hpp"

namespace svdserve::bench {

enum class SvdBenchMethod { gesvda_batched, gesvd, randomized, gesvda_unchecked, gesvdj, gesvdr };

[[nodiscard]] const char* method_name(SvdBenchMethod method) noexcept;

struct SvdBenchOptions {
  // gesvdj stops when the off-diagonal mass falls below tolerance (relative to ||A||_F) or after
  // max sweeps; a tolerance of 0 keeps cuSOLVER's default (fp32 machine epsilon).
  double gesvdj_tolerance = 0.0;
  int gesvdj_max_sweeps = 100;  // cuSOLVER's default
  // gesvdr samples rank + oversampling directions (clamped so that the sum is at most n) and
  // runs `iterations` power iterations; empty oversampling means "as many as the rank".
  std::optional<int> gesvdr_oversampling;
  int gesvdr_iterations = 2;
};

struct SvdBenchReport : gpu::SvdReport {
  int not_converged = 0;  // gesvdj: stopped at max sweeps above tolerance (results still usable)
};

class SvdBenchSolver {
 public:
  SvdBenchSolver(gpu::StreamView stream, cusolverDnHandle_t cusolver, cublasHandle_t cublas);
  ~SvdBenchSolver();
  SvdBenchSolver(const SvdBenchSolver&) = delete;
  SvdBenchSolver& operator=(const SvdBenchSolver&) = delete;

  // Fills batch.u, batch.s and batch.v; synchronises the stream. Throws when cuSOLVER reports a
  // failure.
  SvdBenchReport solve(const gpu::SvdBatch& batch, SvdBenchMethod method,
                       const SvdBenchOptions& options = {});

 private:
  struct ParamsDeleter {
    using pointer = cusolverDnParams_t;
    void operator()(cusolverDnParams_t params) const noexcept;
  };
  struct GesvdjInfoDeleter {
    using pointer = gesvdjInfo_t;
    void operator()(gesvdjInfo_t info) const noexcept;
  };
  // A per-matrix solver's operands: A_index copied (the solvers overwrite their input), and U
  // (m x n), S (n) and V (n x n) sized as for a full economy SVD.
  struct Operands {
    float* a;
    float* u;
    float* s;
    float* v;
  };

  Operands prepare(const gpu::SvdBatch& batch, int index);
  // The leading `rank` columns of U (ld m) and V (ld n, not transposed) and values of S.
  void copy_leading(const gpu::SvdBatch& batch, int index, const Operands& operands);
  // Each writes its cuSOLVER info to matrix_info_[index] and does not wait.
  void solve_gesvdj(const gpu::SvdBatch& batch, int index, const SvdBenchOptions& options);
  void solve_gesvdr(const gpu::SvdBatch& batch, int index, const SvdBenchOptions& options);
  // Reads matrix_info_ and throws on failures; counts gesvdj's non-convergence.
  void check_matrix_info(const gpu::SvdBatch& batch, SvdBenchMethod method,
                         SvdBenchReport& report);

  gpu::StreamView stream_;
  cusolverDnHandle_t cusolver_;
  gpu::GpuSvdSolver server_solver_;
  std::unique_ptr<cusolverDnParams_t, ParamsDeleter> params_;
  std::unique_ptr<gesvdjInfo_t, GesvdjInfoDeleter> gesvdj_info_;
  gpu::DeviceBuffer work_;
  gpu::DeviceBuffer info_;
  gpu::DeviceBuffer matrix_info_;  // one int per matrix
  gpu::DeviceBuffer a_;
  gpu::DeviceBuffer u_;
  gpu::DeviceBuffer s_;
  gpu::DeviceBuffer v_;
  std::vector<char> host_work_;
  gpu::PinnedBuffer host_;
};

}  // namespace svdserve::bench
