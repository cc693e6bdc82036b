// One-sided Jacobi SVD (cusolverDnSgesvdj), economy size, one matrix at a time.
#include <cstddef>

#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/svd/solver.hpp"
#include "kernels/trace.hpp"

namespace svdserve::gpu {

void GpuSvdSolver::solve_gesvdj(const SvdBatch& b, int index, const SvdOptions& options) {
  trace::ScopedRange range("svd_gesvdj");
  if (options.gesvdj_tolerance > 0.0) {
    SVDSERVE_CUSOLVER_CHECK(
        cusolverDnXgesvdjSetTolerance(gesvdj_info_.get(), options.gesvdj_tolerance));
  }
  SVDSERVE_CUSOLVER_CHECK(
      cusolverDnXgesvdjSetMaxSweeps(gesvdj_info_.get(), options.gesvdj_max_sweeps));
  // econ = 1 with m >= n: U is m x n (ld m), V is n x n (ld n), V itself rather than VT.
  constexpr int kEconomy = 1;
  const auto [a, u, s, v] = prepare_exact(b, index);
  int lwork = 0;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSgesvdj_bufferSize(cusolver_, CUSOLVER_EIG_MODE_VECTOR,
                                                       kEconomy, b.m, b.n, a, b.m, s, u, b.m, v,
                                                       b.n, &lwork, gesvdj_info_.get()));
  work_.grow_to(static_cast<std::size_t>(lwork) * sizeof(float));
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSgesvdj(cusolver_, CUSOLVER_EIG_MODE_VECTOR, kEconomy, b.m,
                                            b.n, a, b.m, s, u, b.m, v, b.n, work_.as<float>(),
                                            lwork, matrix_info_.as<int>() + index,
                                            gesvdj_info_.get()));
  copy_leading(b, index, u, s, v);
}

}  // namespace svdserve::gpu
