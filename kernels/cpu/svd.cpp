#include "kernels/cpu/svd.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "kernels/cpu/lapack_support.hpp"
#include "kernels/errors.hpp"
#include "kernels/svd_flops.hpp"

namespace svdserve {
namespace {

// The randomized solver's cost grows with its sketch l and sgesdd's does not: past this share of
// min(h, w) the exact solve is cheaper, and its accuracy comes free.
// 1024^2, one core of a loaded 2-core host: a sketch of 0.31 min(h,w) costs 0.27x sgesdd, 0.56
// costs 0.68x, the full width 2.2x; 0.5 leaves margin for noisier timings.
constexpr double kRandomizedMaxSketchShare = 0.5;

const RandomizedSvdOptions kRandomizedOptions{};

}  // namespace

CpuSvdEngine choose_svd_engine(CpuSvdMethod method, uint32_t height, uint32_t width,
                               uint32_t rank) noexcept {
  if (method == CpuSvdMethod::exact) return CpuSvdEngine::exact;
  const uint32_t sketch = sketch_columns(height, width, rank, kRandomizedOptions);
  const double limit = kRandomizedMaxSketchShare * std::min(height, width);
  return sketch <= limit ? CpuSvdEngine::randomized : CpuSvdEngine::exact;
}

double truncated_svd_flops(CpuSvdMethod method, uint32_t height, uint32_t width,
                           uint32_t rank) noexcept {
  if (choose_svd_engine(method, height, width, rank) == CpuSvdEngine::exact) {
    return exact_svd_flops(height, width);
  }
  const uint32_t sketch = sketch_columns(height, width, rank, kRandomizedOptions);
  return randomized_svd_flops(height, width, sketch, rank, kRandomizedOptions.power_iterations);
}

PlaneSvd truncated_svd(std::span<const float> plane, uint32_t height, uint32_t width,
                       uint32_t rank, CpuSvdMethod method, SvdWorkspace& workspace) {
  using cpu_lapack::shape_text;
  const uint32_t full_rank = std::min(height, width);
  if (full_rank > kMaxCpuSvdFullRank ||
      std::max(height, width) > static_cast<uint32_t>(std::numeric_limits<int>::max())) {
    throw InvalidArgument("a " + shape_text(height, width) +
                          " image is too large for the CPU solver (at most " +
                          std::to_string(kMaxCpuSvdFullRank) + " on the shorter side)");
  }
  if (rank == 0 || rank > full_rank) {
    throw InternalError("truncated_svd asked for rank " + std::to_string(rank) + " of a " +
                        shape_text(height, width) + " plane");
  }
  if (choose_svd_engine(method, height, width, rank) == CpuSvdEngine::randomized) {
    return randomized_svd(plane, height, width, rank, kRandomizedOptions, workspace.randomized);
  }
  return exact_svd(plane, height, width, rank, workspace.exact);
}

}  // namespace svdserve
