// Orchestration of the batched randomized SVD (see randomized_svd.hpp): strided-batched cuBLAS
// calls for every product, the own kernels of randomized_svd_kernels.cu for the rest.

#include "kernels/gpu/svd/randomized_svd.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/svd/randomized_svd_kernels.hpp"

namespace svdserve::gpu {
namespace {

// Between power iterations only the range matters: 2 passes gave the same error ratios as 1.
constexpr int kPassesBetweenIterations = 1;
constexpr int kPassesFinal = 2;  // U = Q W must be orthonormal to fp32 roundoff

// For the duration of a solve: the solver's stream, pedantic FP32 (no TF32 or emulated FP32,
// whatever the handle or the environment says) and host scalars. Restored afterwards.
class CublasScope {
 public:
  CublasScope(cublasHandle_t handle, StreamView stream) : handle_(handle) {
    SVDSERVE_CUBLAS_CHECK(cublasGetMathMode(handle_, &saved_math_));
    SVDSERVE_CUBLAS_CHECK(cublasGetPointerMode(handle_, &saved_pointer_mode_));
    SVDSERVE_CUBLAS_CHECK(cublasGetStream(handle_, &saved_stream_));
    SVDSERVE_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH));
    restore_ = true;
    SVDSERVE_CUBLAS_CHECK(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST));
    // Only when it differs: setting a stream also resets any user workspace of the handle.
    if (saved_stream_ != stream.value()) {
      SVDSERVE_CUBLAS_CHECK(cublasSetStream(handle_, stream.value()));
      restore_stream_ = true;
    }
  }
  CublasScope(const CublasScope&) = delete;
  CublasScope& operator=(const CublasScope&) = delete;
  ~CublasScope() {
    if (restore_stream_) cublasSetStream(handle_, saved_stream_);
    cublasSetPointerMode(handle_, saved_pointer_mode_);
    if (restore_) cublasSetMathMode(handle_, saved_math_);
  }

 private:
  cublasHandle_t handle_;
  cublasMath_t saved_math_ = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t saved_pointer_mode_ = CUBLAS_POINTER_MODE_HOST;
  cudaStream_t saved_stream_ = nullptr;
  bool restore_ = false;
  bool restore_stream_ = false;
};

// C_i = op(A_i) op(B_i), column-major, for every matrix of the batch (stride 0: shared).
struct GemmShape {
  cublasOperation_t op_a;
  cublasOperation_t op_b;
  int m;
  int n;
  int k;
};

// C_i = op(A_i) op(B_i) in float or double (cuBLAS's S and D entry points).
template <typename Real>
void gemm_batched(cublasHandle_t cublas, GemmShape shape, const Real* a, int lda,
                  long long stride_a, const Real* b, int ldb, long long stride_b, Real* c, int ldc,
                  long long stride_c, int count) {
  static_assert(std::is_same_v<Real, float> || std::is_same_v<Real, double>);
  const Real one = 1;
  const Real zero = 0;
  constexpr auto gemm = [] {
    if constexpr (std::is_same_v<Real, float>) {
      return &cublasSgemmStridedBatched;
    } else {
      return &cublasDgemmStridedBatched;
    }
  }();
  SVDSERVE_CUBLAS_CHECK(gemm(cublas, shape.op_a, shape.op_b, shape.m, shape.n, shape.k, &one, a,
                             lda, stride_a, b, ldb, stride_b, &zero, c, ldc, stride_c, count));
}

void validate(const SvdBatch& batch, const RandomizedSvdOptions& options, int l) {
  if (batch.m < batch.n || batch.n < 1 || batch.count < 1) {
    throw InvalidArgument("randomized SVD: need m >= n >= 1 and count >= 1, got m=" +
                          std::to_string(batch.m) + " n=" + std::to_string(batch.n) +
                          " count=" + std::to_string(batch.count));
  }
  if (batch.rank < 1 || batch.rank > l) {
    throw InvalidArgument("randomized SVD: rank " + std::to_string(batch.rank) +
                          " outside 1.." + std::to_string(l) + " (min(n, " +
                          std::to_string(RandomizedSvd::kMaxSketchColumns) + "))");
  }
  if (options.oversampling < 0 || options.power_iterations < 0) {
    throw InvalidArgument("randomized SVD: oversampling and power_iterations must be >= 0");
  }
  if (!(options.jacobi_tolerance > 0.0 && options.jacobi_tolerance < 1.0)) {
    throw InvalidArgument("randomized SVD: jacobi_tolerance must be in (0, 1)");
  }
  if (batch.a == nullptr || batch.u == nullptr || batch.s == nullptr || batch.v == nullptr) {
    throw InvalidArgument("randomized SVD: null input or output pointer");
  }
}

}  // namespace

class RandomizedSvd::StageMarks {
 public:
  StageMarks(RsvdStageObserver* observer, StreamView stream)
      : observer_(observer), stream_(stream) {}
  void started() const {
    if (observer_ != nullptr) observer_->started(stream_);
  }
  void finished(RsvdStage stage) const {
    if (observer_ != nullptr) observer_->finished(stage, stream_);
  }
  void solved() const {
    if (observer_ != nullptr) observer_->solved();
  }

 private:
  RsvdStageObserver* observer_;
  StreamView stream_;
};

RandomizedSvd::RandomizedSvd(StreamView stream, cublasHandle_t cublas,
                             cusolverDnHandle_t /*cusolver*/)
    : stream_(stream), cublas_(cublas) {}

int RandomizedSvd::sketch_columns(int n, int rank, const RandomizedSvdOptions& options) {
  const int wanted = std::max(rank + std::max(options.oversampling, 0), options.min_sketch_columns);
  return std::min({wanted, n, kMaxSketchColumns});
}

int RandomizedSvd::iterations_for(int n, int rank, const RandomizedSvdOptions& options) {
  // 1024^2, k=128, l=160: q=3 1.0022x the optimal error, q=4 1.0007x (photos).
  const bool capped = sketch_columns(n, rank, options) < std::min(rank + options.oversampling, n);
  return options.power_iterations + (capped ? 1 : 0);
}

void RandomizedSvd::orthonormalise(float*& x, float*& spare, int rows, int l, int count,
                                   int passes, const StageMarks& marks) {
  const auto basis_values = static_cast<std::size_t>(rows) * l;
  const auto gram_values = static_cast<std::size_t>(l) * l;
  auto* x_double = basis_double_.as<double>();
  auto* gram = gram_.as<double>();
  auto* r_inverse = r_inverse_.as<float>();
  for (int pass = 0; pass < passes; ++pass) {
    // Gram in float64: CholeskyQR's cond^2 then never reaches fp32 (see the header).
    rsvd::widen_to_double(x, x_double, basis_values * count, stream_);
    marks.finished(RsvdStage::ortho_widen);
    gemm_batched(cublas_, {CUBLAS_OP_T, CUBLAS_OP_N, l, l, rows}, x_double, rows,
                 static_cast<long long>(basis_values), x_double, rows,
                 static_cast<long long>(basis_values), gram, l,
                 static_cast<long long>(gram_values), count);
    marks.finished(RsvdStage::ortho_gram);
    rsvd::cholesky_inverse(gram, r_inverse, l, count, info_.as<int>(), stream_);
    marks.finished(RsvdStage::ortho_cholesky);
    gemm_batched(cublas_, {CUBLAS_OP_N, CUBLAS_OP_N, rows, l, l}, x, rows,
                 static_cast<long long>(basis_values), r_inverse, l,
                 static_cast<long long>(gram_values), spare, rows,
                 static_cast<long long>(basis_values), count);
    marks.finished(RsvdStage::ortho_apply);
    std::swap(x, spare);
  }
}

void RandomizedSvd::solve(const SvdBatch& batch, const RandomizedSvdOptions& options) {
  const int l = sketch_columns(batch.n, batch.rank, options);
  validate(batch, options, l);
  const int m = batch.m;
  const int n = batch.n;
  const int count = batch.count;
  const int rank = batch.rank;
  const auto matrix_values = static_cast<long long>(m) * n;
  const auto tall_values = static_cast<std::size_t>(m) * l;  // m >= n: room for Y, Q and Z
  const auto wide_values = static_cast<std::size_t>(n) * l;
  const auto small_values = static_cast<std::size_t>(l) * l;
  const auto batch_size = static_cast<std::size_t>(count);

  omega_.grow_to(wide_values * sizeof(float));
  basis_.grow_to(batch_size * tall_values * sizeof(float));
  basis_spare_.grow_to(batch_size * tall_values * sizeof(float));
  basis_double_.grow_to(batch_size * std::max(tall_values, wide_values) * sizeof(double));
  gram_.grow_to(batch_size * small_values * sizeof(double));
  r_inverse_.grow_to(batch_size * small_values * sizeof(float));
  projected_.grow_to(batch_size * wide_values * sizeof(float));
  projected_double_.grow_to(batch_size * wide_values * sizeof(double));
  eigenvectors_.grow_to(batch_size * static_cast<std::size_t>(l) * rank * sizeof(float));
  info_.grow_to(batch_size * sizeof(int));
  info_host_.grow_to(batch_size * sizeof(int));

  const CublasScope scope(cublas_, stream_);
  const StageMarks marks(options.stage_observer, stream_);
  marks.started();
  SVDSERVE_CUDA_CHECK(
      cudaMemsetAsync(info_.data(), 0, batch_size * sizeof(int), stream_.value()));

  // One Omega for the whole batch (stride 0): independence across matrices is not needed.
  auto* omega = omega_.as<float>();
  rsvd::fill_gaussian(omega, wide_values, options.seed, stream_);

  float* q = basis_.as<float>();
  float* spare = basis_spare_.as<float>();
  const auto tall_stride = static_cast<long long>(tall_values);
  const auto wide_stride = static_cast<long long>(wide_values);
  // A sketch capped below rank + oversampling gets one more iteration instead.
  const int power_iterations = iterations_for(n, rank, options);
  const int first_passes = power_iterations == 0 ? kPassesFinal : kPassesBetweenIterations;

  // Y = A Omega, then subspace iteration with orthonormalisation after every product (without
  // it the columns collapse onto the top singular vector in fp32).
  gemm_batched(cublas_, {CUBLAS_OP_N, CUBLAS_OP_N, m, l, n}, batch.a, m, matrix_values, omega, n,
               0, q, m, tall_stride, count);
  marks.finished(RsvdStage::sketch_gemm);
  orthonormalise(q, spare, m, l, count, first_passes, marks);
  for (int iteration = 0; iteration < power_iterations; ++iteration) {
    gemm_batched(cublas_, {CUBLAS_OP_T, CUBLAS_OP_N, n, l, m}, batch.a, m, matrix_values, q, m,
                 tall_stride, spare, n, wide_stride, count);
    std::swap(q, spare);  // q now holds Z (n x l)
    marks.finished(RsvdStage::power_gemm);
    orthonormalise(q, spare, n, l, count, kPassesBetweenIterations, marks);
    gemm_batched(cublas_, {CUBLAS_OP_N, CUBLAS_OP_N, m, l, n}, batch.a, m, matrix_values, q, n,
                 wide_stride, spare, m, tall_stride, count);
    std::swap(q, spare);
    marks.finished(RsvdStage::power_gemm);
    const bool last = iteration + 1 == power_iterations;
    orthonormalise(q, spare, m, l, count, last ? kPassesFinal : kPassesBetweenIterations, marks);
  }

  // B = Q^T A (l x n), and its Gram B B^T in float64 for the eigen-solver.
  auto* projected = projected_.as<float>();
  auto* projected_double = projected_double_.as<double>();
  auto* gram = gram_.as<double>();
  gemm_batched(cublas_, {CUBLAS_OP_T, CUBLAS_OP_N, l, n, m}, q, m, tall_stride, batch.a, m,
               matrix_values, projected, l, wide_stride, count);
  marks.finished(RsvdStage::project_gemm);
  rsvd::widen_to_double(projected, projected_double, wide_values * batch_size, stream_);
  gemm_batched(cublas_, {CUBLAS_OP_N, CUBLAS_OP_T, l, l, n}, projected_double, l, wide_stride,
               projected_double, l, wide_stride, gram, l, static_cast<long long>(small_values),
               count);
  marks.finished(RsvdStage::eigen_gram);
  auto* eigenvectors = eigenvectors_.as<float>();
  rsvd::jacobi_top_eigenpairs(gram, l, rank, options.jacobi_tolerance, batch.s, eigenvectors,
                              count, info_.as<int>(), stream_);
  marks.finished(RsvdStage::eigen_solve);

  // U = Q W_k; V = B^T W_k = A^T U, scaled to unit columns (= divided by sigma).
  const auto eigen_stride = static_cast<long long>(l) * rank;
  gemm_batched(cublas_, {CUBLAS_OP_N, CUBLAS_OP_N, m, rank, l}, q, m, tall_stride, eigenvectors,
               l, eigen_stride, batch.u, m, static_cast<long long>(m) * rank, count);
  gemm_batched(cublas_, {CUBLAS_OP_T, CUBLAS_OP_N, n, rank, l}, projected, l, wide_stride,
               eigenvectors, l, eigen_stride, batch.v, n, static_cast<long long>(n) * rank,
               count);
  rsvd::normalise_columns(batch.v, n, rank, count, stream_);
  marks.finished(RsvdStage::factor_gemm);

  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(info_host_.data(), info_.data(), batch_size * sizeof(int),
                                      cudaMemcpyDeviceToHost, stream_.value()));
  stream_.synchronize();
  marks.finished(RsvdStage::status);
  marks.solved();
  const int* info = info_host_.as<int>();
  for (int index = 0; index < count; ++index) {
    if (info[index] == 0) continue;
    const bool not_finite = (info[index] & rsvd::kInfoNotFinite) != 0;
    throw InternalError("randomized SVD: matrix " + std::to_string(index) + " of " +
                        std::to_string(count) + " (" + std::to_string(m) + "x" +
                        std::to_string(n) + ", rank " + std::to_string(rank) + "): " +
                        (not_finite ? "a Gram matrix holds NaN/Inf (non-finite input?)"
                                    : "Jacobi eigen-solver did not converge") +
                        "; redo it with an exact solver");
  }
}

}  // namespace svdserve::gpu
