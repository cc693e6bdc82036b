#pragma once
// The float64 reference the CPU backend is judged against: LAPACK dgesdd through LAPACKE's
// row-major interface (deliberately not the backend's transposed column-major path), and
// double-precision reconstruction.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/factors.hpp"

namespace svdserve::test {

struct ReferenceSvd {
  uint32_t height = 0;
  uint32_t width = 0;
  std::vector<double> u;                // height x min(h, w), row-major
  std::vector<double> singular_values;  // min(h, w), largest first
  std::vector<double> vt;               // min(h, w) x width, row-major
};

[[nodiscard]] ReferenceSvd reference_svd(std::span<const float> plane, uint32_t height,
                                         uint32_t width);

// Best rank-k approximation from the float64 SVD, height x width row-major.
[[nodiscard]] std::vector<double> reference_rank_k(const ReferenceSvd& svd, uint32_t rank);

// ||A - A_k||_F of the best rank-k approximation: the norm of the dropped singular values.
[[nodiscard]] double optimal_error(const ReferenceSvd& svd, uint32_t rank);

// U_k diag(S_k) Vt_k of one channel of the backend's fp32 factors, computed in double.
[[nodiscard]] std::vector<double> rank_k_from_factors(const CpuFactors& factors, uint32_t channel,
                                                      uint32_t rank);

[[nodiscard]] double frobenius_norm(std::span<const double> values);
[[nodiscard]] double frobenius_distance(std::span<const double> a, std::span<const float> b);
[[nodiscard]] double frobenius_distance(std::span<const double> a, std::span<const double> b);

}  // namespace svdserve::test
