#include "kernels/gpu/svd/solver.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/svd/randomized_svd.hpp"
#include "kernels/trace.hpp"

namespace svdserve::gpu {

const char* method_name(SvdMethod method) noexcept {
  switch (method) {
    case SvdMethod::automatic: return "automatic";
    case SvdMethod::gesvda_batched: return "gesvda_batched";
    case SvdMethod::gesvd: return "gesvd";
    case SvdMethod::gesvda_unchecked: return "gesvda_unchecked";
    case SvdMethod::gesvdj: return "gesvdj";
    case SvdMethod::gesvdr: return "gesvdr";
    case SvdMethod::randomized: return "randomized";
  }
  return "unknown";
}

GpuSvdSolver::GpuSvdSolver(StreamView stream, cusolverDnHandle_t cusolver, cublasHandle_t cublas)
    : stream_(stream), cusolver_(cusolver), cublas_(cublas) {
  SVDSERVE_CUSOLVER_CHECK(cusolverDnCreateParams(&gesvd_params_));
  gesvdjInfo_t gesvdj_info = nullptr;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnCreateGesvdjInfo(&gesvdj_info));
  gesvdj_info_.reset(gesvdj_info);
}

GpuSvdSolver::~GpuSvdSolver() { cusolverDnDestroyParams(gesvd_params_); }

void GpuSvdSolver::GesvdjInfoDeleter::operator()(gesvdjInfo_t info) const noexcept {
  cusolverDnDestroyGesvdjInfo(info);
}

SvdReport GpuSvdSolver::solve(const SvdBatch& batch, SvdMethod method, const SvdOptions& options) {
  trace::ScopedRange range("svd_solve");
  if (batch.m < batch.n || batch.rank < 1 || batch.rank > batch.n || batch.count < 1) {
    throw InternalError("invalid SVD batch shape m=" + std::to_string(batch.m) +
                        " n=" + std::to_string(batch.n) + " rank=" + std::to_string(batch.rank));
  }
  if (method == SvdMethod::automatic) {
    method = batch.rank <= RandomizedSvd::kMaxSketchColumns ? SvdMethod::randomized
                                                            : SvdMethod::gesvda_batched;
  }
  SvdReport report;
  std::vector<int> per_matrix;
  SvdMethod per_matrix_method = method;
  if (method == SvdMethod::randomized && solve_randomized(batch, options, report)) {
    stream_.synchronize();
    return report;
  }
  if (method == SvdMethod::randomized) {
    per_matrix.resize(static_cast<std::size_t>(batch.count));
    std::iota(per_matrix.begin(), per_matrix.end(), 0);
    report.recomputed = batch.count;
    per_matrix_method = SvdMethod::gesvd;
  } else if (method == SvdMethod::gesvda_batched || method == SvdMethod::gesvda_unchecked) {
    solve_gesvda(batch, report, per_matrix);
    if (method == SvdMethod::gesvda_unchecked) per_matrix.clear();
    report.recomputed = static_cast<int>(per_matrix.size());
    per_matrix_method = SvdMethod::gesvd;
  } else {
    per_matrix.resize(static_cast<std::size_t>(batch.count));
    std::iota(per_matrix.begin(), per_matrix.end(), 0);
  }
  if (!per_matrix.empty()) {
    matrix_info_.grow_to(static_cast<std::size_t>(batch.count) * sizeof(int));
    for (int index : per_matrix) {
      switch (per_matrix_method) {
        case SvdMethod::gesvdj: solve_gesvdj(batch, index, options); break;
        case SvdMethod::gesvdr: solve_gesvdr(batch, index, options); break;
        default: solve_gesvd(batch, index); break;
      }
    }
    check_matrix_info(batch, per_matrix, per_matrix_method, report);
  }
  stream_.synchronize();
  return report;
}

bool GpuSvdSolver::solve_randomized(const SvdBatch& batch, const SvdOptions& options,
                                    SvdReport& report) {
  if (batch.rank > RandomizedSvd::kMaxSketchColumns) return false;
  if (!randomized_) randomized_ = std::make_unique<RandomizedSvd>(stream_, cublas_, cusolver_);
  RandomizedSvdOptions randomized_options;
  randomized_options.oversampling = options.randomized_oversampling;
  randomized_options.power_iterations = options.randomized_power_iterations;
  try {
    randomized_->solve(batch, randomized_options);
  } catch (const InternalError&) {
    // Non-finite input or an eigen-solver that did not converge: the exact path decides (it
    // throws for non-finite input too, naming the matrix).
    return false;
  }
  report.checked += batch.count;
  return true;
}

void GpuSvdSolver::solve_gesvda(const SvdBatch& b, SvdReport& report, std::vector<int>& redo) {
  const long long stride_a = static_cast<long long>(b.m) * b.n;
  const long long stride_u = static_cast<long long>(b.m) * b.rank;
  const long long stride_v = static_cast<long long>(b.n) * b.rank;
  int lwork = 0;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSgesvdaStridedBatched_bufferSize(
      cusolver_, CUSOLVER_EIG_MODE_VECTOR, b.rank, b.m, b.n, b.a, b.m, stride_a, b.s, b.rank, b.u,
      b.m, stride_u, b.v, b.n, stride_v, &lwork, b.count));
  work_.grow_to(static_cast<std::size_t>(lwork) * sizeof(float));
  info_.grow_to(static_cast<std::size_t>(b.count) * sizeof(int));
  std::vector<double> residual(static_cast<std::size_t>(b.count));
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSgesvdaStridedBatched(
      cusolver_, CUSOLVER_EIG_MODE_VECTOR, b.rank, b.m, b.n, b.a, b.m, stride_a, b.s, b.rank, b.u,
      b.m, stride_u, b.v, b.n, stride_v, work_.as<float>(), lwork, info_.as<int>(),
      residual.data(), b.count));

  // Read back info and the singular values for the check.
  info_host_.reserve(static_cast<std::size_t>(b.count) * sizeof(int) +
                     static_cast<std::size_t>(b.count) * b.rank * sizeof(float));
  int* info = info_host_.as<int>();
  float* s_host = reinterpret_cast<float*>(info + b.count);
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(info, info_.data(), b.count * sizeof(int),
                                      cudaMemcpyDeviceToHost, stream_.value()));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(s_host, b.s, sizeof(float) * b.count * b.rank,
                                      cudaMemcpyDeviceToHost, stream_.value()));
  stream_.synchronize();
  const bool have_norms = b.norms_squared.size() >= static_cast<std::size_t>(b.count);
  for (int i = 0; i < b.count; ++i) {
    report.info_failures += info[i] != 0;
    if (!have_norms) {
      if (info[i] != 0) redo.push_back(i);
      continue;
    }
    ++report.checked;
    double kept = 0.0;
    for (int k = 0; k < b.rank; ++k) {
      const double sigma = s_host[static_cast<std::size_t>(i) * b.rank + k];
      kept += sigma * sigma;
    }
    const double total = b.norms_squared[static_cast<std::size_t>(i)];
    // cuSOLVER's documentation leaves open whether the residual is absolute or relative to
    // ||A||_F; a correct partial SVD satisfies the identity under one reading, a wrong one under
    // neither (to within kIdentityTolerance), so accept either.
    const double r = residual[i];
    const double identity_error =
        total > 0 ? std::min(std::abs((kept + r * r) / total - 1.0),
                             std::abs(kept / total + r * r - 1.0))
                  : 0.0;
    report.worst_identity_error = std::max(report.worst_identity_error, identity_error);
    report.best_identity_error = std::min(report.best_identity_error, identity_error);
    if (info[i] != 0 || !std::isfinite(identity_error) || identity_error > kIdentityTolerance) {
      ++report.failed_check;
      redo.push_back(i);
    }
  }
}

GpuSvdSolver::ExactOperands GpuSvdSolver::prepare_exact(const SvdBatch& b, int index) {
  const std::size_t mn = static_cast<std::size_t>(b.m) * b.n;
  exact_a_.grow_to(mn * sizeof(float));
  exact_u_.grow_to(mn * sizeof(float));
  exact_s_.grow_to(static_cast<std::size_t>(b.n) * sizeof(float));
  exact_vt_.grow_to(static_cast<std::size_t>(b.n) * b.n * sizeof(float));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(exact_a_.data(), b.a + index * mn, mn * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
  return {exact_a_.as<float>(), exact_u_.as<float>(), exact_s_.as<float>(),
          exact_vt_.as<float>()};
}

void GpuSvdSolver::copy_leading(const SvdBatch& b, int index, const float* u, const float* s,
                                const float* v) {
  // Column-major with ld = rows: the first `rank` columns are the first rank*rows floats.
  const std::size_t u_count = static_cast<std::size_t>(b.m) * b.rank;
  const std::size_t v_count = static_cast<std::size_t>(b.n) * b.rank;
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(b.u + index * u_count, u, u_count * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(b.v + index * v_count, v, v_count * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(b.s + static_cast<std::size_t>(index) * b.rank, s,
                                      static_cast<std::size_t>(b.rank) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
}

void GpuSvdSolver::check_matrix_info(const SvdBatch& b, std::span<const int> indices,
                                     SvdMethod method, SvdReport& report) {
  info_host_.reserve(static_cast<std::size_t>(b.count) * sizeof(int));
  int* info = info_host_.as<int>();
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(info, matrix_info_.data(), b.count * sizeof(int),
                                      cudaMemcpyDeviceToHost, stream_.value()));
  stream_.synchronize();
  const std::string shape = std::to_string(b.m) + "x" + std::to_string(b.n);
  for (int index : indices) {
    const int value = info[index];
    if (value == 0) continue;
    // gesvdj reports n+1 when it stops at max sweeps: the factors are usable, only less exact.
    if (method == SvdMethod::gesvdj && value == std::min(b.m, b.n) + 1) {
      ++report.not_converged;
      continue;
    }
    throw InternalError(std::string("cuSOLVER ") + method_name(method) +
                        (value > 0 ? " did not converge" : " rejected an argument") +
                        " (info=" + std::to_string(value) + ") on matrix " +
                        std::to_string(index) + " of a " + shape + " batch");
  }
}

void GpuSvdSolver::solve_gesvd(const SvdBatch& b, int index) {
  trace::ScopedRange range("svd_gesvd");
  const auto [a, u, s, vt] = prepare_exact(b, index);
  std::size_t device_bytes = 0, host_bytes = 0;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnXgesvd_bufferSize(
      cusolver_, gesvd_params_, 'S', 'S', b.m, b.n, CUDA_R_32F, a, b.m, CUDA_R_32F, s, CUDA_R_32F,
      u, b.m, CUDA_R_32F, vt, b.n, CUDA_R_32F, &device_bytes, &host_bytes));
  work_.grow_to(device_bytes);
  if (host_work_.size() < host_bytes) host_work_.resize(host_bytes);
  SVDSERVE_CUSOLVER_CHECK(cusolverDnXgesvd(
      cusolver_, gesvd_params_, 'S', 'S', b.m, b.n, CUDA_R_32F, a, b.m, CUDA_R_32F, s, CUDA_R_32F,
      u, b.m, CUDA_R_32F, vt, b.n, CUDA_R_32F, work_.data(), device_bytes,
      host_work_.empty() ? nullptr : host_work_.data(), host_bytes,
      matrix_info_.as<int>() + index));
  // U is column-major m x n (ld m): its first `rank` columns are its first rank*m floats.
  const std::size_t u_count = static_cast<std::size_t>(b.m) * b.rank;
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(b.u + index * u_count, u, u_count * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
  // V (n x rank) is the transpose of VT's first `rank` rows (an rank x n block with ld n).
  const float one = 1.0f, zero = 0.0f;
  float* v_out = b.v + static_cast<std::size_t>(index) * b.n * b.rank;
  SVDSERVE_CUBLAS_CHECK(cublasSgeam(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, b.n, b.rank, &one, vt, b.n,
                                    &zero, v_out, b.n, v_out, b.n));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(b.s + static_cast<std::size_t>(index) * b.rank, s,
                                      static_cast<std::size_t>(b.rank) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
}

}  // namespace svdserve::gpu
