#pragma once
// Truncated SVD of one plane on the CPU with LAPACK's divide-and-conquer solver (sgesdd, OpenBLAS).

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/aligned_vector.hpp"
#include "kernels/cpu/factors.hpp"

namespace svdserve {

// Scratch one worker reuses for every plane it decomposes: it grows to the largest shape seen and
// is never shared between threads.
struct SvdWorkspace {
  AlignedVector<float> matrix;           // the input copy sgesdd overwrites
  AlignedVector<float> left_vectors;     // width x min(h, w), column-major: V
  AlignedVector<float> right_vectors;    // min(h, w) x height, column-major: U^T
  AlignedVector<float> singular_values;  // min(h, w)
  AlignedVector<float> work;
  std::vector<int> integer_work;
};

struct PlaneSvd {
  CpuChannelFactors factors;           // U (height x rank) and Vt (rank x width), row-major
  std::vector<float> singular_values;  // rank values, largest first
};

// Largest min(height, width) the CPU solver takes: LAPACK's 32-bit workspace size (about
// 4 min(h,w)^2 floats) must not overflow.
inline constexpr uint32_t kMaxCpuSvdFullRank = 16384;

// The top `rank` singular triplets of the row-major height x width plane, which must be finite
// (LAPACK may loop or fail on NaN). rank is in 1..min(height, width).
// Throws InvalidArgument when the plane is too large, InternalError when LAPACK fails.
[[nodiscard]] PlaneSvd truncated_svd(std::span<const float> plane, uint32_t height, uint32_t width,
                                     uint32_t rank, SvdWorkspace& workspace);

}  // namespace svdserve
