#include "kernels/cpu/randomized_svd.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/cpu/lapack_support.hpp"
#include "kernels/errors.hpp"

namespace svdserve {
namespace {

static_assert(std::is_same_v<lapack_int, int>,
              "RandomizedSvdWorkspace::integer_work assumes 32-bit LAPACK");

void check_info(lapack_int info, const char* routine, const std::string& what) {
  if (info == 0) return;
  throw InternalError(std::string("LAPACK ") + routine + " rejected argument " +
                      std::to_string(-info) + " for " + what + " (a bug in svdserve)");
}

// The same Omega for every plane of a shape, so results do not depend on the worker or the order.
void draw_sketch(RandomizedSvdWorkspace& workspace, uint32_t rows, uint32_t columns,
                 uint64_t seed) {
  if (workspace.omega_rows == rows && workspace.omega_columns == columns &&
      workspace.omega_seed == seed) {
    return;
  }
  workspace.omega_rows = 0;  // invalid until filled
  workspace.omega.resize(std::size_t{rows} * columns);
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> gaussian;
  for (float& value : workspace.omega) value = gaussian(generator);
  workspace.omega_rows = rows;
  workspace.omega_columns = columns;
  workspace.omega_seed = seed;
}

// The plane as LAPACK sees it: the row-major height x width plane A, read column-major, is
// M = A^T (width x height, leading dimension width), used as it lies with no copy. M's left
// singular vectors are A's right ones (the rows of Vt), and the other way round.
struct ColumnMajorShape {
  lapack_int rows;     // width
  lapack_int columns;  // height
  lapack_int sketch;   // l
  lapack_int rank;     // k
};

class Solver {
 public:
  Solver(const float* matrix, ColumnMajorShape shape, RandomizedSvdWorkspace& workspace,
         std::string what)
      : matrix_(matrix), shape_(shape), workspace_(workspace), what_(std::move(what)) {}

  // Sizes every buffer before the first product; nothing grows after this.
  void reserve() {
    const auto rows = static_cast<std::size_t>(shape_.rows);
    const auto columns = static_cast<std::size_t>(shape_.columns);
    const auto sketch = static_cast<std::size_t>(shape_.sketch);
    const auto rank = static_cast<std::size_t>(shape_.rank);
    workspace_.basis.resize(rows * sketch);
    workspace_.cobasis.resize(columns * sketch);
    workspace_.projected.resize(sketch * columns);
    workspace_.projected_double.resize(sketch * columns);
    workspace_.gram.resize(sketch * sketch);
    workspace_.eigenvalues.resize(sketch);
    workspace_.top_vectors.resize(sketch * rank);
    workspace_.right_vectors.resize(rank * columns);
    workspace_.norms.resize(rank);
    workspace_.tau.resize(sketch);
    workspace_.basis_double.resize(std::max(rows, columns) * sketch);
    workspace_.r_factor.resize(sketch * sketch);

    float largest = 0.0F;
    for (const lapack_int height : {shape_.rows, shape_.columns}) {
      float size = 0.0F;
      check_info(LAPACKE_sgeqrf_work(LAPACK_COL_MAJOR, height, shape_.sketch, nullptr, height,
                                     nullptr, &size, -1),
                 "sgeqrf", what_);
      largest = std::max(largest, size);
      check_info(LAPACKE_sorgqr_work(LAPACK_COL_MAJOR, height, shape_.sketch, shape_.sketch,
                                     nullptr, height, nullptr, &size, -1),
                 "sorgqr", what_);
      largest = std::max(largest, size);
    }
    workspace_.work.resize(cpu_lapack::workspace_from_query(largest));

    double double_size = 0.0;
    lapack_int integer_size = 0;
    check_info(eigen_solve(&double_size, -1, &integer_size, -1), "dsyevd", what_);
    workspace_.double_work.resize(std::max<std::size_t>(1, static_cast<std::size_t>(double_size)));
    workspace_.integer_work.resize(
        std::max<std::size_t>(1, static_cast<std::size_t>(integer_size)));
  }

  // Y = M Z (rows x l) from Z (columns x l).
  void multiply(const float* z, float* y) const {
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, shape_.rows, shape_.sketch,
                shape_.columns, 1.0F, matrix_, shape_.rows, z, shape_.columns, 0.0F, y,
                shape_.rows);
  }
  // Z = M^T Q (columns x l) from Q (rows x l).
  void multiply_transposed(const float* q, float* z) const {
    cblas_sgemm(CblasColMajor, CblasTrans, CblasNoTrans, shape_.columns, shape_.sketch,
                shape_.rows, 1.0F, matrix_, shape_.rows, q, shape_.rows, 0.0F, z,
                shape_.columns);
  }

  // X (height x l) := an orthonormal basis of its range, Householder QR in place.
  void orthonormalise(float* x, lapack_int height) {
    const auto work_size = static_cast<lapack_int>(workspace_.work.size());
    check_info(LAPACKE_sgeqrf_work(LAPACK_COL_MAJOR, height, shape_.sketch, x, height,
                                   workspace_.tau.data(), workspace_.work.data(), work_size),
               "sgeqrf", what_);
    check_info(LAPACKE_sorgqr_work(LAPACK_COL_MAJOR, height, shape_.sketch, shape_.sketch, x,
                                   height, workspace_.tau.data(), workspace_.work.data(),
                                   work_size),
               "sorgqr", what_);
  }

  // X (height x l) := a basis of its range with orthonormal columns up to u cond(X), enough
  // between iterations, where only the range matters: CholeskyQR with the Gram matrix and its
  // factor in float64 (so cond^2 never meets fp32), X R^-1 in fp32. Householder where the Gram
  // is not positive definite (a rank-deficient sketch).
  void orthonormalise_range(float* x, lapack_int height) {
    const std::size_t values = static_cast<std::size_t>(height) * shape_.sketch;
    double* x_double = workspace_.basis_double.data();
    std::copy_n(x, values, x_double);
    double* gram = workspace_.gram.data();
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, shape_.sketch, height, 1.0, x_double,
                height, 0.0, gram, shape_.sketch);
    const lapack_int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'U', shape_.sketch, gram,
                                                shape_.sketch);
    if (info != 0) {
      check_info(std::min(info, 0), "dpotrf", what_);
      orthonormalise(x, height);
      return;
    }
    std::copy_n(gram, workspace_.r_factor.size(), workspace_.r_factor.data());
    cblas_strsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, height,
                shape_.sketch, 1.0F, workspace_.r_factor.data(), shape_.sketch, x, height);
  }

  // B = Q^T M (l x columns), kept in float64, and the eigenvectors W of B B^T.
  void project_and_solve() {
    cblas_sgemm(CblasColMajor, CblasTrans, CblasNoTrans, shape_.sketch, shape_.columns,
                shape_.rows, 1.0F, workspace_.basis.data(), shape_.rows, matrix_, shape_.rows,
                0.0F, workspace_.projected.data(), shape_.sketch);
    std::ranges::copy(workspace_.projected, workspace_.projected_double.begin());
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, shape_.sketch, shape_.columns, 1.0,
                workspace_.projected_double.data(), shape_.sketch, 0.0, workspace_.gram.data(),
                shape_.sketch);
    const lapack_int info = eigen_solve(
        workspace_.double_work.data(), static_cast<lapack_int>(workspace_.double_work.size()),
        workspace_.integer_work.data(), static_cast<lapack_int>(workspace_.integer_work.size()));
    cpu_lapack::check_svd_info(info, "dsyevd", what_);
  }

  // U (columns x rank, row-major) and S from W_k^T B in float64: each row's norm is its singular
  // value, the row scaled to unit norm a left singular vector of A.
  void write_u(std::span<float> u, std::span<float> singular_values) {
    const auto sketch = static_cast<std::size_t>(shape_.sketch);
    const auto columns = static_cast<std::size_t>(shape_.columns);
    const auto rank = static_cast<std::size_t>(shape_.rank);
    // dsyevd sorts ascending: W_k is the last rank columns, smallest first.
    const double* top = workspace_.gram.data() + (sketch - rank) * sketch;
    double* product = workspace_.right_vectors.data();
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, shape_.rank, shape_.columns,
                shape_.sketch, 1.0, top, shape_.sketch, workspace_.projected_double.data(),
                shape_.sketch, 0.0, product, shape_.rank);
    auto& norms = workspace_.norms;
    std::ranges::fill(norms, 0.0);
    for (std::size_t column = 0; column < columns; ++column) {
      const double* values = product + column * rank;
      for (std::size_t i = 0; i < rank; ++i) norms[i] += values[i] * values[i];
    }
    for (std::size_t i = 0; i < rank; ++i) {
      norms[i] = std::sqrt(norms[i]);
      singular_values[rank - 1 - i] = static_cast<float>(norms[i]);
      norms[i] = norms[i] > 0.0 ? 1.0 / norms[i] : 0.0;  // absent direction: zero vector
    }
    for (std::size_t column = 0; column < columns; ++column) {
      const double* values = product + column * rank;
      float* row = u.data() + column * rank;
      for (std::size_t i = 0; i < rank; ++i) {
        row[rank - 1 - i] = static_cast<float>(values[i] * norms[i]);
      }
    }
  }

  // Vt (rank x rows, row-major) = (Q W_k)^T, largest first; zero where U is.
  void write_vt(std::span<float> vt) {
    const auto sketch = static_cast<std::size_t>(shape_.sketch);
    const auto rank = static_cast<std::size_t>(shape_.rank);
    const double* top = workspace_.gram.data() + (sketch - rank) * sketch;
    for (std::size_t i = 0; i < rank; ++i) {
      const double* source = top + (rank - 1 - i) * sketch;
      float* target = workspace_.top_vectors.data() + i * sketch;
      const bool absent = workspace_.norms[rank - 1 - i] == 0.0;
      for (std::size_t j = 0; j < sketch; ++j) {
        target[j] = absent ? 0.0F : static_cast<float>(source[j]);
      }
    }
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, shape_.rows, shape_.rank,
                shape_.sketch, 1.0F, workspace_.basis.data(), shape_.rows,
                workspace_.top_vectors.data(), shape_.sketch, 0.0F, vt.data(), shape_.rows);
  }

 private:
  lapack_int eigen_solve(double* work, lapack_int work_size, lapack_int* integer_work,
                         lapack_int integer_work_size) {
    return LAPACKE_dsyevd_work(LAPACK_COL_MAJOR, 'V', 'U', shape_.sketch, workspace_.gram.data(),
                               shape_.sketch, workspace_.eigenvalues.data(), work, work_size,
                               integer_work, integer_work_size);
  }

  const float* matrix_;
  ColumnMajorShape shape_;
  RandomizedSvdWorkspace& workspace_;
  std::string what_;
};

}  // namespace

uint32_t sketch_columns(uint32_t height, uint32_t width, uint32_t rank,
                        const RandomizedSvdOptions& options) noexcept {
  const auto wanted = std::max<int64_t>(int64_t{rank} + std::max(options.oversampling, 0),
                                        options.min_sketch_columns);
  return static_cast<uint32_t>(std::min<int64_t>(wanted, std::min(height, width)));
}

PlaneSvd randomized_svd(std::span<const float> plane, uint32_t height, uint32_t width,
                        uint32_t rank, const RandomizedSvdOptions& options,
                        RandomizedSvdWorkspace& workspace) {
  const uint32_t sketch = sketch_columns(height, width, rank, options);
  if (rank == 0 || rank > sketch || options.power_iterations < 0) {
    throw InternalError("randomized_svd asked for rank " + std::to_string(rank) + " of a " +
                        cpu_lapack::shape_text(height, width) + " plane");
  }
  const ColumnMajorShape shape{static_cast<lapack_int>(width), static_cast<lapack_int>(height),
                               static_cast<lapack_int>(sketch), static_cast<lapack_int>(rank)};
  Solver solver(plane.data(), shape, workspace,
                "a " + cpu_lapack::shape_text(height, width) + " plane at rank " +
                    std::to_string(rank));
  solver.reserve();
  draw_sketch(workspace, height, sketch, options.seed);

  // Subspace iteration, orthonormalised after every product: without it the columns collapse
  // onto the top singular vector in fp32.
  float* const q = workspace.basis.data();
  float* const z = workspace.cobasis.data();
  // onto the top singular vector in fp32. Only the final basis, which B and U are made from,
  // needs Householder's orthonormality; CholeskyQR is half its cost in between (1024 x 128:
  // 1.6 vs 3.9 ms).
  const auto orthonormalise_basis = [&](bool final) {
    if (final) {
      solver.orthonormalise(q, shape.rows);
    } else {
      solver.orthonormalise_range(q, shape.rows);
    }
  };
  solver.multiply(workspace.omega.data(), q);
  orthonormalise_basis(options.power_iterations == 0);
  for (int iteration = 0; iteration < options.power_iterations; ++iteration) {
    solver.multiply_transposed(q, z);
    solver.orthonormalise_range(z, shape.columns);
    solver.multiply(z, q);
    orthonormalise_basis(iteration + 1 == options.power_iterations);
  }
  solver.project_and_solve();

  PlaneSvd result;
  result.singular_values.resize(rank);
  result.factors.u.resize(std::size_t{height} * rank);
  result.factors.vt.resize(std::size_t{rank} * width);
  solver.write_u(result.factors.u, result.singular_values);
  solver.write_vt(result.factors.vt);
  return result;
}

}  // namespace svdserve
