#pragma once
// Small helpers the CPU solvers share around LAPACK calls.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "kernels/errors.hpp"

namespace svdserve::cpu_lapack {

[[nodiscard]] inline std::string shape_text(uint32_t height, uint32_t width) {
  return std::to_string(height) + "x" + std::to_string(width);
}

// info from an SVD driver (sgesdd) on `what`, e.g. "a 512x384 plane".
inline void check_svd_info(int info, const char* routine, const std::string& what) {
  if (info == 0) return;
  if (info > 0) {
    throw InternalError(std::string("LAPACK ") + routine + " did not converge on " + what +
                        " (info " + std::to_string(info) + ")");
  }
  throw InternalError(std::string("LAPACK ") + routine + " rejected argument " +
                      std::to_string(-info) + " for " + what + " (a bug in svdserve)");
}

// LAPACK reports the optimal workspace as a float, which rounds large sizes down; step up one ulp.
[[nodiscard]] inline std::size_t workspace_from_query(float optimal_size) {
  const float rounded_up = std::nextafter(optimal_size, std::numeric_limits<float>::infinity());
  return std::max<std::size_t>(1, static_cast<std::size_t>(rounded_up));
}

}  // namespace svdserve::cpu_lapack
