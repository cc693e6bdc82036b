#include "reference_svd.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace svdserve::test {

ReferenceSvd reference_svd(std::span<const float> plane, uint32_t height, uint32_t width) {
  const uint32_t min_dim = std::min(height, width);
  ReferenceSvd svd;
  svd.height = height;
  svd.width = width;
  std::vector<double> matrix(plane.begin(), plane.end());
  svd.u.resize(std::size_t{height} * min_dim);
  svd.singular_values.resize(min_dim);
  svd.vt.resize(std::size_t{min_dim} * width);
  const lapack_int info = LAPACKE_dgesdd(
      LAPACK_ROW_MAJOR, 'S', static_cast<lapack_int>(height), static_cast<lapack_int>(width),
      matrix.data(), static_cast<lapack_int>(width), svd.singular_values.data(), svd.u.data(),
      static_cast<lapack_int>(min_dim), svd.vt.data(), static_cast<lapack_int>(width));
  if (info != 0) throw std::runtime_error("reference dgesdd failed, info " + std::to_string(info));
  return svd;
}

namespace {

// (height x rank, leading dimension u_stride) * diag(s) * (rank x width) in double.
std::vector<double> scaled_product(std::span<const double> u, std::size_t u_stride,
                                   std::span<const double> singular_values,
                                   std::span<const double> vt, uint32_t height, uint32_t width,
                                   uint32_t rank) {
  std::vector<double> scaled_u(std::size_t{height} * rank);
  for (std::size_t row = 0; row < height; ++row) {
    for (std::size_t i = 0; i < rank; ++i) {
      scaled_u[row * rank + i] = u[row * u_stride + i] * singular_values[i];
    }
  }
  std::vector<double> result(std::size_t{height} * width);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(height),
              static_cast<int>(width), static_cast<int>(rank), 1.0, scaled_u.data(),
              static_cast<int>(rank), vt.data(), static_cast<int>(width), 0.0, result.data(),
              static_cast<int>(width));
  return result;
}

}  // namespace

std::vector<double> reference_rank_k(const ReferenceSvd& svd, uint32_t rank) {
  return scaled_product(svd.u, svd.singular_values.size(), svd.singular_values, svd.vt, svd.height,
                        svd.width, rank);
}

double optimal_error(const ReferenceSvd& svd, uint32_t rank) {
  double dropped = 0.0;
  for (std::size_t i = rank; i < svd.singular_values.size(); ++i) {
    dropped += svd.singular_values[i] * svd.singular_values[i];
  }
  return std::sqrt(dropped);
}

std::vector<double> rank_k_from_factors(const CpuFactors& factors, uint32_t channel,
                                        uint32_t rank) {
  const ImageShape& shape = factors.shape();
  const CpuChannelFactors& channel_factors = factors.channel(channel);
  const auto singular_values = factors.singular_values(channel);
  const std::vector<double> u(channel_factors.u.begin(), channel_factors.u.end());
  const std::vector<double> s(singular_values.begin(), singular_values.end());
  const std::vector<double> vt(channel_factors.vt.begin(), channel_factors.vt.end());
  return scaled_product(u, factors.rank_kept(), s, vt, shape.height, shape.width, rank);
}

double frobenius_norm(std::span<const double> values) {
  double sum = 0.0;
  for (const double v : values) sum += v * v;
  return std::sqrt(sum);
}

double frobenius_distance(std::span<const double> a, std::span<const float> b) {
  if (a.size() != b.size()) throw std::invalid_argument("frobenius_distance: sizes differ");
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = a[i] - double{b[i]};
    sum += d * d;
  }
  return std::sqrt(sum);
}

double frobenius_distance(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size()) throw std::invalid_argument("frobenius_distance: sizes differ");
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = a[i] - b[i];
    sum += d * d;
  }
  return std::sqrt(sum);
}

}  // namespace svdserve::test
