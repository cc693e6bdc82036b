#include "kernels/cpu/exact_svd.hpp"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/cpu/lapack_support.hpp"
#include "kernels/errors.hpp"

namespace svdserve {
namespace {

static_assert(std::is_same_v<lapack_int, int>,
              "ExactSvdWorkspace::integer_work assumes 32-bit LAPACK");

// sgesdd's integer workspace is 8 min(m, n).
constexpr std::size_t kIntegerWorkPerRank = 8;

}  // namespace

PlaneSvd exact_svd(std::span<const float> plane, uint32_t height, uint32_t width, uint32_t rank,
                   ExactSvdWorkspace& workspace) {
  using cpu_lapack::shape_text;
  const uint32_t full_rank = std::min(height, width);

  // LAPACK is column-major. The row-major height x width plane A, read column-major, is A^T
  // (width x height, leading dimension width), so we decompose A^T = V S U^T as it lies and no
  // transposed copy is made (LAPACKE's row-major path would make two). LAPACK's left vectors are
  // then V, whose columns are the rows of Vt, and its right vectors U^T, which read row-major is
  // U with leading dimension min(h, w).
  const lapack_int rows = static_cast<lapack_int>(width);
  const lapack_int cols = static_cast<lapack_int>(height);
  const lapack_int min_dim = static_cast<lapack_int>(full_rank);
  const std::size_t min_dim_size = full_rank;

  workspace.matrix.assign(plane.begin(), plane.end());  // sgesdd destroys its input
  workspace.left_vectors.resize(std::size_t{width} * min_dim_size);
  workspace.right_vectors.resize(min_dim_size * height);
  workspace.singular_values.resize(min_dim_size);
  workspace.integer_work.resize(kIntegerWorkPerRank * min_dim_size);

  const auto solve = [&](float* work, lapack_int work_size) {
    return LAPACKE_sgesdd_work(LAPACK_COL_MAJOR, 'S', rows, cols, workspace.matrix.data(), rows,
                               workspace.singular_values.data(), workspace.left_vectors.data(),
                               rows, workspace.right_vectors.data(), min_dim, work, work_size,
                               workspace.integer_work.data());
  };
  const std::string what = "a " + shape_text(height, width) + " plane";
  float optimal_work_size = 0.0F;
  cpu_lapack::check_svd_info(solve(&optimal_work_size, -1), "sgesdd", what);
  const std::size_t work_size = cpu_lapack::workspace_from_query(optimal_work_size);
  if (work_size > static_cast<std::size_t>(std::numeric_limits<lapack_int>::max())) {
    throw InvalidArgument("a " + shape_text(height, width) +
                          " image needs more LAPACK workspace than a 32-bit size can address");
  }
  workspace.work.resize(work_size);
  cpu_lapack::check_svd_info(solve(workspace.work.data(), static_cast<lapack_int>(work_size)),
                             "sgesdd", what);

  PlaneSvd result;
  result.singular_values.assign(workspace.singular_values.begin(),
                                workspace.singular_values.begin() + rank);
  // Vt's first rank rows are V's first rank columns, contiguous.
  result.factors.vt.assign(workspace.left_vectors.begin(),
                           workspace.left_vectors.begin() + std::size_t{rank} * width);
  // U's rows have stride min(h, w) in LAPACK's buffer; keep the first rank entries of each.
  result.factors.u.resize(std::size_t{height} * rank);
  for (std::size_t row = 0; row < height; ++row) {
    const float* source = workspace.right_vectors.data() + row * min_dim_size;
    std::copy_n(source, rank, result.factors.u.data() + row * rank);
  }
  return result;
}

}  // namespace svdserve
