#include "bench/svd_methods.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/svd/gesvda.hpp"

namespace svdserve::bench {

const char* method_name(SvdBenchMethod method) noexcept {
  switch (method) {
    case SvdBenchMethod::gesvda_batched: return "gesvda_batched";
    case SvdBenchMethod::gesvd: return "gesvd";
    case SvdBenchMethod::randomized: return "randomized";
    case SvdBenchMethod::gesvda_unchecked: return "gesvda_unchecked";
    case SvdBenchMethod::gesvdj: return "gesvdj";
    case SvdBenchMethod::gesvdr: return "gesvdr";
  }
  return "unknown";
}

void SvdBenchSolver::ParamsDeleter::operator()(cusolverDnParams_t params) const noexcept {
  cusolverDnDestroyParams(params);
}

void SvdBenchSolver::GesvdjInfoDeleter::operator()(gesvdjInfo_t info) const noexcept {
  cusolverDnDestroyGesvdjInfo(info);
}

SvdBenchSolver::SvdBenchSolver(gpu::StreamView stream, cusolverDnHandle_t cusolver,
                               cublasHandle_t cublas)
    : stream_(stream), cusolver_(cusolver), server_solver_(stream, cusolver, cublas) {
  cusolverDnParams_t params = nullptr;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnCreateParams(&params));
  params_.reset(params);
  gesvdjInfo_t gesvdj_info = nullptr;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnCreateGesvdjInfo(&gesvdj_info));
  gesvdj_info_.reset(gesvdj_info);
}

SvdBenchSolver::~SvdBenchSolver() = default;

SvdBenchReport SvdBenchSolver::solve(const gpu::SvdBatch& batch, SvdBenchMethod method,
                                     const SvdBenchOptions& options) {
  SvdBenchReport report;
  switch (method) {
    case SvdBenchMethod::gesvda_batched:
      static_cast<gpu::SvdReport&>(report) =
          server_solver_.solve(batch, gpu::SvdMethod::gesvda_batched);
      return report;
    case SvdBenchMethod::gesvd:
      static_cast<gpu::SvdReport&>(report) = server_solver_.solve(batch, gpu::SvdMethod::gesvd);
      return report;
    case SvdBenchMethod::randomized:
      static_cast<gpu::SvdReport&>(report) =
          server_solver_.solve(batch, gpu::SvdMethod::randomized);
      return report;
    case SvdBenchMethod::gesvda_unchecked:
      // The matrices that failed the check keep gesvda's own factors.
      (void)gpu::gesvda_batched(batch, stream_, cusolver_, {work_, info_, host_}, report);
      return report;
    case SvdBenchMethod::gesvdj:
    case SvdBenchMethod::gesvdr:
      break;
  }
  matrix_info_.grow_to(static_cast<std::size_t>(batch.count) * sizeof(int));
  for (int index = 0; index < batch.count; ++index) {
    if (method == SvdBenchMethod::gesvdj) {
      solve_gesvdj(batch, index, options);
    } else {
      solve_gesvdr(batch, index, options);
    }
  }
  check_matrix_info(batch, method, report);
  return report;
}

SvdBenchSolver::Operands SvdBenchSolver::prepare(const gpu::SvdBatch& b, int index) {
  const std::size_t mn = static_cast<std::size_t>(b.m) * b.n;
  a_.grow_to(mn * sizeof(float));
  u_.grow_to(mn * sizeof(float));
  s_.grow_to(static_cast<std::size_t>(b.n) * sizeof(float));
  v_.grow_to(static_cast<std::size_t>(b.n) * b.n * sizeof(float));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(a_.data(), b.a + index * mn, mn * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
  return {a_.as<float>(), u_.as<float>(), s_.as<float>(), v_.as<float>()};
}

void SvdBenchSolver::copy_leading(const gpu::SvdBatch& b, int index, const Operands& operands) {
  // Column-major with ld = rows: the first `rank` columns are the first rank*rows floats.
  const std::size_t u_count = static_cast<std::size_t>(b.m) * b.rank;
  const std::size_t v_count = static_cast<std::size_t>(b.n) * b.rank;
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(b.u + index * u_count, operands.u, u_count * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(b.v + index * v_count, operands.v, v_count * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(b.s + static_cast<std::size_t>(index) * b.rank, operands.s,
                                      static_cast<std::size_t>(b.rank) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
}

void SvdBenchSolver::solve_gesvdj(const gpu::SvdBatch& b, int index,
                                  const SvdBenchOptions& options) {
  if (options.gesvdj_tolerance > 0.0) {
    SVDSERVE_CUSOLVER_CHECK(
        cusolverDnXgesvdjSetTolerance(gesvdj_info_.get(), options.gesvdj_tolerance));
  }
  SVDSERVE_CUSOLVER_CHECK(
      cusolverDnXgesvdjSetMaxSweeps(gesvdj_info_.get(), options.gesvdj_max_sweeps));
  // econ = 1 with m >= n: U is m x n (ld m), V is n x n (ld n), V itself rather than VT.
  constexpr int kEconomy = 1;
  const Operands operands = prepare(b, index);
  const auto [a, u, s, v] = operands;
  int lwork = 0;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSgesvdj_bufferSize(cusolver_, CUSOLVER_EIG_MODE_VECTOR,
                                                       kEconomy, b.m, b.n, a, b.m, s, u, b.m, v,
                                                       b.n, &lwork, gesvdj_info_.get()));
  work_.grow_to(static_cast<std::size_t>(lwork) * sizeof(float));
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSgesvdj(cusolver_, CUSOLVER_EIG_MODE_VECTOR, kEconomy, b.m,
                                            b.n, a, b.m, s, u, b.m, v, b.n, work_.as<float>(),
                                            lwork, matrix_info_.as<int>() + index,
                                            gesvdj_info_.get()));
  copy_leading(b, index, operands);
}

void SvdBenchSolver::solve_gesvdr(const gpu::SvdBatch& b, int index,
                                  const SvdBenchOptions& options) {
  const int64_t k = b.rank;
  // cuSOLVER requires k + p <= min(m, n) = n.
  const int64_t p = std::clamp<int64_t>(options.gesvdr_oversampling.value_or(b.rank), 0, b.n - k);
  const int64_t iterations = std::max(0, options.gesvdr_iterations);
  // Outputs sized as for a full economy SVD: more than the k columns the documentation promises,
  // so that no reading of it can write past them. V (n x k, ld n) comes out not transposed.
  const Operands operands = prepare(b, index);
  const auto [a, u, s, v] = operands;
  std::size_t device_bytes = 0;
  std::size_t host_bytes = 0;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnXgesvdr_bufferSize(
      cusolver_, params_.get(), 'S', 'S', b.m, b.n, k, p, iterations, CUDA_R_32F, a, b.m,
      CUDA_R_32F, s, CUDA_R_32F, u, b.m, CUDA_R_32F, v, b.n, CUDA_R_32F, &device_bytes,
      &host_bytes));
  work_.grow_to(device_bytes);
  if (host_work_.size() < host_bytes) host_work_.resize(host_bytes);
  SVDSERVE_CUSOLVER_CHECK(cusolverDnXgesvdr(
      cusolver_, params_.get(), 'S', 'S', b.m, b.n, k, p, iterations, CUDA_R_32F, a, b.m,
      CUDA_R_32F, s, CUDA_R_32F, u, b.m, CUDA_R_32F, v, b.n, CUDA_R_32F, work_.data(),
      device_bytes, host_work_.empty() ? nullptr : host_work_.data(), host_bytes,
      matrix_info_.as<int>() + index));
  copy_leading(b, index, operands);
}

void SvdBenchSolver::check_matrix_info(const gpu::SvdBatch& b, SvdBenchMethod method,
                                       SvdBenchReport& report) {
  host_.reserve(static_cast<std::size_t>(b.count) * sizeof(int));
  int* info = host_.as<int>();
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(info, matrix_info_.data(), b.count * sizeof(int),
                                      cudaMemcpyDeviceToHost, stream_.value()));
  stream_.synchronize();
  for (int index = 0; index < b.count; ++index) {
    const int value = info[index];
    if (value == 0) continue;
    // gesvdj reports n+1 when it stops at max sweeps: the factors are usable, only less exact.
    if (method == SvdBenchMethod::gesvdj && value == std::min(b.m, b.n) + 1) {
      ++report.not_converged;
      continue;
    }
    throw std::runtime_error(std::string("cuSOLVER ") + method_name(method) +
                             (value > 0 ? " did not converge" : " rejected an argument") +
                             " (info=" + std::to_string(value) + ") on matrix " +
                             std::to_string(index) + " of a " + std::to_string(b.m) + "x" +
                             std::to_string(b.n) + " batch");
  }
}

}  // namespace svdserve::bench
