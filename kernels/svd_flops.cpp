#include "kernels/svd_flops.hpp"

#include <algorithm>

namespace svdserve {

double exact_svd_flops(uint32_t height, uint32_t width) noexcept {
  const double m = std::max(height, width);
  const double n = std::min(height, width);
  return 6.0 * m * n * n + 20.0 * n * n * n;
}

double randomized_svd_flops(uint32_t height, uint32_t width, uint32_t sketch, uint32_t rank,
                            int power_iterations) noexcept {
  const double m = height;
  const double n = width;
  const double l = sketch;
  const double k = rank;
  const double iterations = std::max(power_iterations, 0) + 1.0;
  const double products = 2.0 * m * n * l * (2.0 * iterations);  // sketch, powers, projection
  const double orthonormalisations = 4.0 * (m + n) * l * l * iterations;
  const double eigenproblem = 2.0 * n * l * l + 9.0 * l * l * l;
  const double factors = 2.0 * (m + n) * l * k;
  return products + orthonormalisations + eigenproblem + factors;
}

}  // namespace svdserve
