// Randomized top-k SVD (cusolverDnXgesvdr), one matrix at a time: it samples the range of A with
// rank + p random vectors, sharpens it with power iterations, and solves the small projected
// problem. Cheap when rank << n; its accuracy depends on how fast the spectrum decays.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/svd/solver.hpp"
#include "kernels/trace.hpp"

namespace svdserve::gpu {

void GpuSvdSolver::solve_gesvdr(const SvdBatch& b, int index, const SvdOptions& options) {
  trace::ScopedRange range("svd_gesvdr");
  const int64_t k = b.rank;
  // cuSOLVER requires k + p <= min(m, n) = n.
  const int64_t p = std::clamp<int64_t>(options.gesvdr_oversampling.value_or(b.rank), 0, b.n - k);
  const int64_t iterations = std::max(0, options.gesvdr_iterations);
  // Outputs sized as for a full economy SVD (U m x n, V n x n, S n): more than the k columns the
  // documentation promises, so that no reading of it can write past them. V (n x k, ld n) comes
  // out not transposed.
  const auto [a, u, s, v] = prepare_exact(b, index);
  std::size_t device_bytes = 0, host_bytes = 0;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnXgesvdr_bufferSize(
      cusolver_, gesvd_params_, 'S', 'S', b.m, b.n, k, p, iterations, CUDA_R_32F, a, b.m,
      CUDA_R_32F, s, CUDA_R_32F, u, b.m, CUDA_R_32F, v, b.n, CUDA_R_32F, &device_bytes,
      &host_bytes));
  work_.grow_to(device_bytes);
  if (host_work_.size() < host_bytes) host_work_.resize(host_bytes);
  SVDSERVE_CUSOLVER_CHECK(cusolverDnXgesvdr(
      cusolver_, gesvd_params_, 'S', 'S', b.m, b.n, k, p, iterations, CUDA_R_32F, a, b.m,
      CUDA_R_32F, s, CUDA_R_32F, u, b.m, CUDA_R_32F, v, b.n, CUDA_R_32F, work_.data(),
      device_bytes, host_work_.empty() ? nullptr : host_work_.data(), host_bytes,
      matrix_info_.as<int>() + index));
  copy_leading(b, index, u, s, v);
}

}  // namespace svdserve::gpu
