#pragma once
// Truncated SVD of one plane on the CPU: the policy that picks a solver (randomized where the
// rank kept is small against the image, LAPACK's exact sgesdd elsewhere) and the checks both share.

#include <cstdint>
#include <span>

#include "kernels/cpu/exact_svd.hpp"
#include "kernels/cpu/plane_svd.hpp"
#include "kernels/cpu/randomized_svd.hpp"
#include "kernels/cpu/svd_method.hpp"

namespace svdserve {

// The solver that runs for one plane.
enum class CpuSvdEngine { randomized, exact };

// Scratch one worker reuses for every plane it decomposes; never shared between threads.
struct SvdWorkspace {
  ExactSvdWorkspace exact;
  RandomizedSvdWorkspace randomized;
};

// Largest min(height, width) the CPU solver takes: LAPACK's 32-bit workspace size (about
// 4 min(h,w)^2 floats) must not overflow.
inline constexpr uint32_t kMaxCpuSvdFullRank = 16384;

[[nodiscard]] CpuSvdEngine choose_svd_engine(CpuSvdMethod method, uint32_t height,
                                             uint32_t width, uint32_t rank) noexcept;

// Nominal flops (kernels/svd_flops.hpp) of truncated_svd on such a plane, by the solver that
// choose_svd_engine picks for it.
[[nodiscard]] double truncated_svd_flops(CpuSvdMethod method, uint32_t height, uint32_t width,
                                         uint32_t rank) noexcept;

// The top `rank` singular triplets of the row-major height x width plane, which must be finite
// (LAPACK may loop or fail on NaN). rank is in 1..min(height, width).
// Throws InvalidArgument when the plane is too large, InternalError when LAPACK fails.
[[nodiscard]] PlaneSvd truncated_svd(std::span<const float> plane, uint32_t height, uint32_t width,
                                     uint32_t rank, CpuSvdMethod method, SvdWorkspace& workspace);

}  // namespace svdserve
