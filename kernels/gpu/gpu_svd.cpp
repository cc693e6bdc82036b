#include "kernels/gpu/gpu_svd.hpp"

#include <cmath>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/cuda_check.hpp"
#include "kernels/trace.hpp"

namespace svdserve::gpu {
namespace {

// Grow workspaces by half again so a slowly rising size does not reallocate every time.
std::size_t with_headroom(std::size_t bytes) { return bytes + bytes / 2; }

void reserve(DeviceBuffer& buffer, std::size_t bytes) {
  if (buffer.size() < bytes) buffer.reserve(with_headroom(bytes));
}

}  // namespace

GpuSvdSolver::GpuSvdSolver(StreamView stream, cusolverDnHandle_t cusolver)
    : stream_(stream), cusolver_(cusolver) {
  SVDSERVE_CUSOLVER_CHECK(cusolverDnCreateGesvdjInfo(&gesvdj_params_));
  // fp32 roundoff; 100 sweeps is far above what image matrices need (typically < 15).
  SVDSERVE_CUSOLVER_CHECK(cusolverDnXgesvdjSetTolerance(gesvdj_params_, 1e-7));
  SVDSERVE_CUSOLVER_CHECK(cusolverDnXgesvdjSetMaxSweeps(gesvdj_params_, 100));
}

GpuSvdSolver::~GpuSvdSolver() { cusolverDnDestroyGesvdjInfo(gesvdj_params_); }

SvdReport GpuSvdSolver::solve(const SvdBatch& batch, SvdMethod method) {
  trace::ScopedRange range("svd_solve");
  if (batch.m < batch.n || batch.rank < 1 || batch.rank > batch.n || batch.count < 1) {
    throw InternalError("invalid SVD batch shape m=" + std::to_string(batch.m) +
                        " n=" + std::to_string(batch.n) + " rank=" + std::to_string(batch.rank));
  }
  SvdReport report;
  std::vector<int> redo;
  if (method == SvdMethod::gesvda_batched) {
    solve_gesvda(batch, report, redo);
  } else {
    for (int i = 0; i < batch.count; ++i) redo.push_back(i);
  }
  for (int index : redo) solve_gesvdj(batch, index);
  report.recomputed = method == SvdMethod::gesvda_batched ? static_cast<int>(redo.size()) : 0;
  stream_.synchronize();
  return report;
}

void GpuSvdSolver::solve_gesvda(const SvdBatch& b, SvdReport& report, std::vector<int>& redo) {
  const long long stride_a = static_cast<long long>(b.m) * b.n;
  const long long stride_u = static_cast<long long>(b.m) * b.rank;
  const long long stride_v = static_cast<long long>(b.n) * b.rank;
  int lwork = 0;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSgesvdaStridedBatched_bufferSize(
      cusolver_, CUSOLVER_EIG_MODE_VECTOR, b.rank, b.m, b.n, b.a, b.m, stride_a, b.s, b.rank, b.u,
      b.m, stride_u, b.v, b.n, stride_v, &lwork, b.count));
  reserve(work_, static_cast<std::size_t>(lwork) * sizeof(float));
  reserve(info_, static_cast<std::size_t>(b.count) * sizeof(int));
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
  for (int i = 0; i < b.count; ++i) {
    ++report.checked;
    double kept = 0.0;
    for (int k = 0; k < b.rank; ++k) {
      const double sigma = s_host[static_cast<std::size_t>(i) * b.rank + k];
      kept += sigma * sigma;
    }
    const double total = b.norms_squared[static_cast<std::size_t>(i)];
    const double identity_error =
        total > 0 ? std::abs((kept + residual[i] * residual[i]) / total - 1.0) : 0.0;
    report.worst_identity_error = std::max(report.worst_identity_error, identity_error);
    if (info[i] != 0 || !std::isfinite(identity_error) || identity_error > kIdentityTolerance) {
      redo.push_back(i);
    }
  }
}

void GpuSvdSolver::solve_gesvdj(const SvdBatch& b, int index) {
  trace::ScopedRange range("svd_gesvdj");
  const std::size_t mn = static_cast<std::size_t>(b.m) * b.n;
  reserve(jacobi_a_, mn * sizeof(float));
  reserve(jacobi_u_, static_cast<std::size_t>(b.m) * b.n * sizeof(float));
  reserve(jacobi_s_, static_cast<std::size_t>(b.n) * sizeof(float));
  reserve(jacobi_v_, static_cast<std::size_t>(b.n) * b.n * sizeof(float));
  reserve(info_, sizeof(int));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(jacobi_a_.data(), b.a + index * mn, mn * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
  float* a = jacobi_a_.as<float>();
  float* u = jacobi_u_.as<float>();
  float* s = jacobi_s_.as<float>();
  float* v = jacobi_v_.as<float>();
  int lwork = 0;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSgesvdj_bufferSize(cusolver_, CUSOLVER_EIG_MODE_VECTOR, 1,
                                                       b.m, b.n, a, b.m, s, u, b.m, v, b.n,
                                                       &lwork, gesvdj_params_));
  reserve(work_, static_cast<std::size_t>(lwork) * sizeof(float));
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSgesvdj(cusolver_, CUSOLVER_EIG_MODE_VECTOR, 1, b.m, b.n, a,
                                            b.m, s, u, b.m, v, b.n, work_.as<float>(), lwork,
                                            info_.as<int>(), gesvdj_params_));
  int info = 0;
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(&info, info_.data(), sizeof(int), cudaMemcpyDeviceToHost,
                                      stream_.value()));
  stream_.synchronize();
  if (info != 0) {
    throw InternalError("cuSOLVER gesvdj did not converge (info=" + std::to_string(info) +
                        ") on a " + std::to_string(b.m) + "x" + std::to_string(b.n) + " matrix");
  }
  // Economy U and V are column-major with leading dimensions m and n: their first `rank`
  // columns are their first rank*m (rank*n) floats.
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

}  // namespace svdserve::gpu
