#include "kernels/gpu/svd/gesvda.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/gpu/common/cuda_check.hpp"

namespace svdserve::gpu {

std::vector<int> gesvda_batched(const SvdBatch& b, StreamView stream, cusolverDnHandle_t cusolver,
                                GesvdaScratch scratch, SvdReport& report) {
  const long long stride_a = static_cast<long long>(b.m) * b.n;
  const long long stride_u = static_cast<long long>(b.m) * b.rank;
  const long long stride_v = static_cast<long long>(b.n) * b.rank;
  int lwork = 0;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSgesvdaStridedBatched_bufferSize(
      cusolver, CUSOLVER_EIG_MODE_VECTOR, b.rank, b.m, b.n, b.a, b.m, stride_a, b.s, b.rank, b.u,
      b.m, stride_u, b.v, b.n, stride_v, &lwork, b.count));
  scratch.work.grow_to(static_cast<std::size_t>(lwork) * sizeof(float));
  scratch.info.grow_to(static_cast<std::size_t>(b.count) * sizeof(int));
  std::vector<double> residual(static_cast<std::size_t>(b.count));
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSgesvdaStridedBatched(
      cusolver, CUSOLVER_EIG_MODE_VECTOR, b.rank, b.m, b.n, b.a, b.m, stride_a, b.s, b.rank, b.u,
      b.m, stride_u, b.v, b.n, stride_v, scratch.work.as<float>(), lwork, scratch.info.as<int>(),
      residual.data(), b.count));

  // Read back info and the singular values for the check.
  scratch.host.reserve(static_cast<std::size_t>(b.count) * sizeof(int) +
                       static_cast<std::size_t>(b.count) * b.rank * sizeof(float));
  int* info = scratch.host.as<int>();
  float* s_host = reinterpret_cast<float*>(info + b.count);
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(info, scratch.info.data(), b.count * sizeof(int),
                                      cudaMemcpyDeviceToHost, stream.value()));
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(s_host, b.s, sizeof(float) * b.count * b.rank,
                                      cudaMemcpyDeviceToHost, stream.value()));
  stream.synchronize();
  std::vector<int> failed;
  const bool have_norms = b.norms_squared.size() >= static_cast<std::size_t>(b.count);
  for (int i = 0; i < b.count; ++i) {
    report.info_failures += info[i] != 0;
    if (!have_norms) {
      if (info[i] != 0) failed.push_back(i);
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
    // neither (to within kGesvdaIdentityTolerance), so accept either.
    const double r = residual[i];
    const double identity_error =
        total > 0 ? std::min(std::abs((kept + r * r) / total - 1.0),
                             std::abs(kept / total + r * r - 1.0))
                  : 0.0;
    report.worst_identity_error = std::max(report.worst_identity_error, identity_error);
    report.best_identity_error = std::min(report.best_identity_error, identity_error);
    if (info[i] != 0 || !std::isfinite(identity_error) ||
        identity_error > kGesvdaIdentityTolerance) {
      ++report.failed_check;
      failed.push_back(i);
    }
  }
  return failed;
}

}  // namespace svdserve::gpu
