#pragma once
// Full SVD of one plane with LAPACK's divide-and-conquer solver (sgesdd, OpenBLAS), truncated
// afterwards: LAPACK's accuracy for every singular value, at a cost that follows the image.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/aligned_vector.hpp"
#include "kernels/cpu/plane_svd.hpp"

namespace svdserve {

// Scratch one worker reuses for every plane: it grows to the largest shape seen.
struct ExactSvdWorkspace {
  AlignedVector<float> matrix;           // the input copy sgesdd overwrites
  AlignedVector<float> left_vectors;     // width x min(h, w), column-major: V
  AlignedVector<float> right_vectors;    // min(h, w) x height, column-major: U^T
  AlignedVector<float> singular_values;  // min(h, w)
  AlignedVector<float> work;
  std::vector<int> integer_work;
};

// The top `rank` singular triplets of the finite row-major height x width plane; rank is in
// 1..min(height, width) and the shape within kMaxCpuSvdFullRank (svd.hpp checks both).
// Throws InternalError when LAPACK fails.
[[nodiscard]] PlaneSvd exact_svd(std::span<const float> plane, uint32_t height, uint32_t width,
                                 uint32_t rank, ExactSvdWorkspace& workspace);

}  // namespace svdserve
