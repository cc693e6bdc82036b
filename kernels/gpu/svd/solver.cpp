#include "kernels/gpu/svd/solver.hpp"

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/svd/gesvda.hpp"
#include "kernels/gpu/svd/randomized_svd.hpp"
#include "kernels/svd_flops.hpp"
#include "kernels/trace.hpp"

namespace svdserve::gpu {

const char* method_name(SvdMethod method) noexcept {
  switch (method) {
    case SvdMethod::automatic: return "automatic";
    case SvdMethod::gesvda_batched: return "gesvda_batched";
    case SvdMethod::gesvd: return "gesvd";
    case SvdMethod::randomized: return "randomized";
  }
  return "unknown";
}

SvdMethod resolved_method(SvdMethod method, int rank) noexcept {
  if (method != SvdMethod::automatic) return method;
  return rank <= RandomizedSvd::kMaxSketchColumns ? SvdMethod::randomized
                                                  : SvdMethod::gesvda_batched;
}

double solve_flops(int m, int n, int rank, SvdMethod method) noexcept {
  const auto height = static_cast<uint32_t>(m);
  const auto width = static_cast<uint32_t>(n);
  if (resolved_method(method, rank) == SvdMethod::randomized &&
      rank <= RandomizedSvd::kMaxSketchColumns) {
    const RandomizedSvdOptions options;
    const auto sketch = static_cast<uint32_t>(RandomizedSvd::sketch_columns(n, rank, options));
    return randomized_svd_flops(height, width, sketch, static_cast<uint32_t>(rank),
                                RandomizedSvd::iterations_for(n, rank, options));
  }
  return exact_svd_flops(height, width);
}

GpuSvdSolver::GpuSvdSolver(StreamView stream, cusolverDnHandle_t cusolver, cublasHandle_t cublas)
    : stream_(stream), cusolver_(cusolver), cublas_(cublas) {
  cusolverDnParams_t params = nullptr;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnCreateParams(&params));
  gesvd_params_.reset(params);
}

GpuSvdSolver::~GpuSvdSolver() = default;

void GpuSvdSolver::ParamsDeleter::operator()(cusolverDnParams_t params) const noexcept {
  cusolverDnDestroyParams(params);
}

SvdReport GpuSvdSolver::solve(const SvdBatch& batch, SvdMethod method) {
  trace::ScopedRange range("svd_solve");
  if (batch.m < batch.n || batch.rank < 1 || batch.rank > batch.n || batch.count < 1) {
    throw InternalError("invalid SVD batch shape m=" + std::to_string(batch.m) +
                        " n=" + std::to_string(batch.n) + " rank=" + std::to_string(batch.rank));
  }
  method = resolved_method(method, batch.rank);
  SvdReport report;
  std::vector<int> exact;  // the matrices Xgesvd solves
  if (method == SvdMethod::randomized && solve_randomized(batch, report)) {
    stream_.synchronize();
    return report;
  }
  if (method == SvdMethod::gesvda_batched) {
    exact = gesvda_batched(batch, stream_, cusolver_, {work_, info_, info_host_}, report);
    report.recomputed = static_cast<int>(exact.size());
  } else {
    exact.resize(static_cast<std::size_t>(batch.count));
    std::iota(exact.begin(), exact.end(), 0);
    if (method == SvdMethod::randomized) report.recomputed = batch.count;
  }
  if (!exact.empty()) {
    matrix_info_.grow_to(static_cast<std::size_t>(batch.count) * sizeof(int));
    for (int index : exact) solve_gesvd(batch, index);
    check_matrix_info(batch, exact);
  }
  stream_.synchronize();
  return report;
}

bool GpuSvdSolver::solve_randomized(const SvdBatch& batch, SvdReport& report) {
  if (batch.rank > RandomizedSvd::kMaxSketchColumns) return false;
  if (!randomized_) randomized_ = std::make_unique<RandomizedSvd>(stream_, cublas_, cusolver_);
  try {
    randomized_->solve(batch, RandomizedSvdOptions{});
  } catch (const InternalError&) {
    // Non-finite input or an eigen-solver that did not converge: the exact path decides (it
    // throws for non-finite input too, naming the matrix).
    return false;
  }
  report.checked += batch.count;
  return true;
}

void GpuSvdSolver::check_matrix_info(const SvdBatch& b, std::span<const int> indices) {
  info_host_.reserve(static_cast<std::size_t>(b.count) * sizeof(int));
  int* info = info_host_.as<int>();
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(info, matrix_info_.data(), b.count * sizeof(int),
                                      cudaMemcpyDeviceToHost, stream_.value()));
  stream_.synchronize();
  for (int index : indices) {
    const int value = info[index];
    if (value == 0) continue;
    throw InternalError(std::string("cuSOLVER gesvd") +
                        (value > 0 ? " did not converge" : " rejected an argument") +
                        " (info=" + std::to_string(value) + ") on matrix " +
                        std::to_string(index) + " of a " + std::to_string(b.m) + "x" +
                        std::to_string(b.n) + " batch");
  }
}

void GpuSvdSolver::solve_gesvd(const SvdBatch& b, int index) {
  trace::ScopedRange range("svd_gesvd");
  // Xgesvd overwrites its input: it works on a copy of A_index. U is m x n, S n, VT n x n.
  const std::size_t mn = static_cast<std::size_t>(b.m) * b.n;
  exact_a_.grow_to(mn * sizeof(float));
  exact_u_.grow_to(mn * sizeof(float));
  exact_s_.grow_to(static_cast<std::size_t>(b.n) * sizeof(float));
  exact_vt_.grow_to(static_cast<std::size_t>(b.n) * b.n * sizeof(float));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(exact_a_.data(), b.a + index * mn, mn * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_.value()));
  float* a = exact_a_.as<float>();
  float* u = exact_u_.as<float>();
  float* s = exact_s_.as<float>();
  float* vt = exact_vt_.as<float>();
  std::size_t device_bytes = 0, host_bytes = 0;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnXgesvd_bufferSize(
      cusolver_, gesvd_params_.get(), 'S', 'S', b.m, b.n, CUDA_R_32F, a, b.m, CUDA_R_32F, s,
      CUDA_R_32F, u, b.m, CUDA_R_32F, vt, b.n, CUDA_R_32F, &device_bytes, &host_bytes));
  work_.grow_to(device_bytes);
  if (host_work_.size() < host_bytes) host_work_.resize(host_bytes);
  SVDSERVE_CUSOLVER_CHECK(cusolverDnXgesvd(
      cusolver_, gesvd_params_.get(), 'S', 'S', b.m, b.n, CUDA_R_32F, a, b.m, CUDA_R_32F, s,
      CUDA_R_32F, u, b.m, CUDA_R_32F, vt, b.n, CUDA_R_32F, work_.data(), device_bytes,
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
