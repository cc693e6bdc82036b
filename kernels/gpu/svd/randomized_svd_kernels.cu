// The randomized SVD's own kernels: the Gaussian sketch, float64 widening, the per-matrix
// Cholesky + triangular inverse of CholeskyQR, the per-matrix Jacobi eigen-solver of B B^T, and
// column normalisation. The two per-matrix solvers run one thread block per matrix with the
// whole matrix in shared memory: the matrices are at most 160 x 160, far below what a cuSOLVER
// call per matrix would amortise, and cuSOLVER's batched Jacobi stops at 32 x 32.

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/svd/randomized_svd_kernels.hpp"

namespace svdserve::gpu::rsvd {
namespace {

constexpr int kElementwiseThreads = 256;
constexpr int kMaxElementwiseBlocks = 4096;
constexpr int kWarpSize = 32;
constexpr int kCholeskyThreads = 256;  // a multiple of kWarpSize
constexpr int kJacobiThreads = 512;
constexpr int kNormaliseThreads = 256;
// Relative to the largest Gram diagonal. A float64 Gram of fp32 columns resolves residual norms
// down to ~1e-14 of the largest (fp32 noise squared); below this a column is a combination of
// the previous ones and is dropped rather than amplified.
constexpr double kPivotTolerance = 1e-13;
// Cyclic Jacobi converges quadratically; 6-10 sweeps are typical at l <= 160.
constexpr int kMaxJacobiSweeps = 40;

// ---------------------------------------------------------------------------------------------
// Counter-based Gaussian: splitmix64 of (seed, index), Box-Muller on the two 32-bit halves.

__device__ uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

__global__ void fill_gaussian_kernel(float* out, std::size_t count, uint64_t seed) {
  constexpr float kTwoToMinus24 = 1.0F / 16777216.0F;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const uint64_t bits = splitmix64(seed ^ splitmix64(i));
    // u1 in (0, 1] so the logarithm is finite; 24 bits each, exact in fp32.
    const float u1 = (static_cast<float>(bits >> 40) + 1.0F) * kTwoToMinus24;
    const float u2 = static_cast<float>((bits >> 8) & 0xFFFFFFU) * kTwoToMinus24;
    out[i] = sqrtf(-2.0F * logf(u1)) * cospif(2.0F * u2);
  }
}

__global__ void widen_kernel(const float* in, double* out, std::size_t count) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = static_cast<double>(in[i]);
  }
}

int elementwise_blocks(std::size_t count) {
  const std::size_t blocks = (count + kElementwiseThreads - 1) / kElementwiseThreads;
  return static_cast<int>(blocks < kMaxElementwiseBlocks ? (blocks > 0 ? blocks : 1)
                                                         : kMaxElementwiseBlocks);
}

// The Cholesky kernel, after loading the Gram matrix: a block that saw a non-finite value
// reports it in `info` and leaves R^-1 all zeros (what the caller checks), rather than factoring.
__device__ bool reject_not_finite(int not_finite, int* info, float* r_inverse, int l) {
  if (not_finite == 0) return false;
  if (threadIdx.x == 0) atomicOr(info + blockIdx.x, kInfoNotFinite);
  for (int idx = static_cast<int>(threadIdx.x); idx < l * l; idx += static_cast<int>(blockDim.x)) {
    r_inverse[idx] = 0.0F;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Cholesky + inverse. Shared: g (l x l, column-major; upper = R, strictly lower = R^-1
// transposed), then r_diag (l), x_diag (l), row (l).

__global__ void cholesky_inverse_kernel(const double* gram_batch, float* r_inverse_batch, int l,
                                        int* info) {
  extern __shared__ double shared[];
  const std::size_t matrix_values = static_cast<std::size_t>(l) * l;
  double* g = shared;
  double* r_diag = g + matrix_values;
  double* x_diag = r_diag + l;
  double* row = x_diag + l;
  __shared__ double limit;
  __shared__ int not_finite;

  const double* gram = gram_batch + blockIdx.x * matrix_values;
  float* r_inverse = r_inverse_batch + blockIdx.x * matrix_values;
  const int tid = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  const int warp = tid / kWarpSize;
  const int lane = tid % kWarpSize;
  const int warps = threads / kWarpSize;

  if (tid == 0) not_finite = 0;
  __syncthreads();
  for (int idx = tid; idx < l * l; idx += threads) {
    const double value = gram[idx];
    g[idx] = value;
    if (!isfinite(value)) not_finite = 1;
  }
  __syncthreads();
  if (reject_not_finite(not_finite, info, r_inverse, l)) return;
  if (tid == 0) {
    double largest = 0.0;
    for (int j = 0; j < l; ++j) largest = fmax(largest, g[j + j * l]);
    limit = kPivotTolerance * largest;
  }
  __syncthreads();

  // Right-looking, one column per step: scale row j of R, then the trailing upper triangle.
  for (int j = 0; j < l; ++j) {
    const double pivot = g[j + j * l];
    const bool live = pivot > limit;
    const double r_jj = live ? sqrt(pivot) : 0.0;
    if (tid == 0) r_diag[j] = r_jj;
    for (int k = j + 1 + tid; k < l; k += threads) {
      const double value = live ? g[j + k * l] / r_jj : 0.0;
      g[j + k * l] = value;
      row[k] = value;
    }
    __syncthreads();
    // A warp per column k, lanes over its rows i <= k: no integer division, no idle half.
    if (live) {
      for (int k = j + 1 + warp; k < l; k += warps) {
        const double row_k = row[k];
        for (int i = j + 1 + lane; i <= k; i += kWarpSize) g[i + k * l] -= row[i] * row_k;
      }
    }
    __syncthreads();
  }

  // X = R^-1, one column per thread by back substitution; X(i, c) for i < c is kept at g(c, i).
  for (int c = tid; c < l; c += threads) {
    const bool column_live = r_diag[c] > 0.0;
    for (int i = c; i >= 0; --i) {
      double x = 0.0;
      if (column_live && r_diag[i] > 0.0) {
        double sum = (i == c) ? 1.0 : 0.0;
        for (int k = i + 1; k < c; ++k) sum -= g[i + k * l] * g[c + k * l];
        if (i < c) sum -= g[i + c * l] * x_diag[c];
        x = sum / r_diag[i];
      }
      if (i == c) {
        x_diag[c] = x;
      } else {
        g[c + i * l] = x;
      }
    }
  }
  __syncthreads();
  for (int idx = tid; idx < l * l; idx += threads) {
    const int i = idx % l;
    const int c = idx / l;
    const double x = i < c ? g[c + i * l] : (i == c ? x_diag[c] : 0.0);
    r_inverse[idx] = static_cast<float>(x);
  }
}

// ---------------------------------------------------------------------------------------------
// Parallel cyclic Jacobi (round-robin ordering: h = lp/2 disjoint rotations per step, lp - 1
// steps per sweep). Each step first computes the h rotations, then applies them all at once:
// the 2x2 block of rows {p_a, q_a} x columns {p_b, q_b} depends only on itself, so one thread
// per block updates G in place, and W (eigenvectors, fp32: its roundoff, ~1e-6 after the
// sweeps, is below what the fp32 factors keep anyway) column pairs likewise.
// G is stored packed (upper triangle) so that l = 160 fits in shared memory with W.

struct JacobiLayout {
  int lp;  // l rounded up to even; the padding index is a zero row and column
  int half;
  std::size_t packed_values;
  std::size_t bytes;
  __host__ __device__ explicit JacobiLayout(int l)
      : lp(l + (l & 1)),
        half(lp / 2),
        packed_values(static_cast<std::size_t>(lp) * (lp + 1) / 2),
        bytes((packed_values + 2 * static_cast<std::size_t>(half)) * sizeof(double) +
              static_cast<std::size_t>(lp) * lp * sizeof(float) +
              (2 * static_cast<std::size_t>(half) + lp) * sizeof(int)) {}
};

__device__ __forceinline__ int packed_index(int i, int j) {
  return i <= j ? j * (j + 1) / 2 + i : i * (i + 1) / 2 + j;
}

// Round-robin ("circle") schedule: pairs k = 0..half-1 of step 0..lp-2 cover every pair once.
__device__ __forceinline__ void round_robin_pair(int step, int k, int lp, int& p, int& q) {
  const int ring = lp - 1;
  int a = 0;
  int b = 0;
  if (k == 0) {
    a = step % ring;
    b = ring;
  } else {
    a = (step + k) % ring;
    b = (step - k + ring) % ring;
  }
  p = min(a, b);
  q = max(a, b);
}

__global__ void jacobi_kernel(const double* gram_batch, int l, int rank, double tolerance,
                              float* values_batch, float* vectors_batch, int* info) {
  extern __shared__ double shared[];
  const JacobiLayout layout(l);
  const int lp = layout.lp;
  const int half = layout.half;
  double* g = shared;
  double* cosines = g + layout.packed_values;
  double* sines = cosines + half;
  float* w = reinterpret_cast<float*>(sines + half);
  int* pair_p = reinterpret_cast<int*>(w + static_cast<std::size_t>(lp) * lp);
  int* pair_q = pair_p + half;
  int* order = pair_q + half;
  __shared__ int rotated;

  const double* gram = gram_batch + blockIdx.x * static_cast<std::size_t>(l) * l;
  const int tid = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);

  for (int idx = tid; idx < static_cast<int>(layout.packed_values); idx += threads) {
    // Invert packed_index for the upper triangle: column j, row i <= j.
    int j = static_cast<int>((sqrt(8.0 * idx + 1.0) - 1.0) / 2.0);
    while (j * (j + 1) / 2 > idx) --j;
    while ((j + 1) * (j + 2) / 2 <= idx) ++j;
    const int i = idx - j * (j + 1) / 2;
    g[idx] = (i < l && j < l) ? gram[i + j * l] : 0.0;
  }
  for (int idx = tid; idx < lp * lp; idx += threads) {
    w[idx] = (idx % lp == idx / lp) ? 1.0F : 0.0F;
  }

  bool converged = false;
  for (int sweep = 0; sweep < kMaxJacobiSweeps && !converged; ++sweep) {
    if (tid == 0) rotated = 0;
    __syncthreads();
    for (int step = 0; step < lp - 1; ++step) {
      for (int k = tid; k < half; k += threads) {
        int p = 0;
        int q = 0;
        round_robin_pair(step, k, lp, p, q);
        const double app = g[packed_index(p, p)];
        const double aqq = g[packed_index(q, q)];
        const double apq = g[packed_index(p, q)];
        double c = 1.0;
        double s = 0.0;
        if (apq != 0.0 && fabs(apq) > tolerance * sqrt(fabs(app) * fabs(aqq))) {
          // Golub & Van Loan, sym.schur2: the smaller rotation angle.
          const double tau = (aqq - app) / (2.0 * apq);
          const double t = (tau >= 0.0 ? 1.0 : -1.0) / (fabs(tau) + sqrt(1.0 + tau * tau));
          c = 1.0 / sqrt(1.0 + t * t);
          s = t * c;
          rotated = 1;
        }
        pair_p[k] = p;
        pair_q[k] = q;
        cosines[k] = c;
        sines[k] = s;
      }
      __syncthreads();
      // Each unordered pair of rotations {a, b} once: b = a + offset (mod half) for offsets
      // 0..half/2, where the offset half/2 (even half) would meet every pair twice.
      const int offsets = half / 2 + 1;
      for (int idx = tid; idx < half * offsets; idx += threads) {
        const int first = idx % half;
        const int offset = idx / half;
        if (half % 2 == 0 && offset == half / 2 && first >= half / 2) continue;
        const int second = (first + offset) % half;
        const int a = min(first, second);
        const int b = max(first, second);
        if (sines[a] == 0.0 && sines[b] == 0.0) continue;
        const int pa = pair_p[a];
        const int qa = pair_q[a];
        const double ca = cosines[a];
        const double sa = sines[a];
        if (a == b) {
          const double app = g[packed_index(pa, pa)];
          const double aqq = g[packed_index(qa, qa)];
          const double apq = g[packed_index(pa, qa)];
          g[packed_index(pa, pa)] = ca * ca * app - 2.0 * ca * sa * apq + sa * sa * aqq;
          g[packed_index(qa, qa)] = sa * sa * app + 2.0 * ca * sa * apq + ca * ca * aqq;
          g[packed_index(pa, qa)] = 0.0;
          continue;
        }
        const int pb = pair_p[b];
        const int qb = pair_q[b];
        const double cb = cosines[b];
        const double sb = sines[b];
        const int i00 = packed_index(pa, pb);
        const int i01 = packed_index(pa, qb);
        const int i10 = packed_index(qa, pb);
        const int i11 = packed_index(qa, qb);
        const double m00 = g[i00];
        const double m01 = g[i01];
        const double m10 = g[i10];
        const double m11 = g[i11];
        // J_a^T M J_b with J = [c s; -s c].
        const double x00 = ca * m00 - sa * m10;
        const double x01 = ca * m01 - sa * m11;
        const double x10 = sa * m00 + ca * m10;
        const double x11 = sa * m01 + ca * m11;
        g[i00] = x00 * cb - x01 * sb;
        g[i01] = x00 * sb + x01 * cb;
        g[i10] = x10 * cb - x11 * sb;
        g[i11] = x10 * sb + x11 * cb;
      }
      for (int idx = tid; idx < half * lp; idx += threads) {
        const int k = idx / lp;
        const int r = idx % lp;
        const double s = sines[k];
        if (s == 0.0) continue;
        const double c = cosines[k];
        float* wp = w + static_cast<std::size_t>(pair_p[k]) * lp + r;
        float* wq = w + static_cast<std::size_t>(pair_q[k]) * lp + r;
        const double old_p = *wp;
        const double old_q = *wq;
        *wp = static_cast<float>(c * old_p - s * old_q);
        *wq = static_cast<float>(s * old_p + c * old_q);
      }
      __syncthreads();
    }
    converged = rotated == 0;
    __syncthreads();  // everyone has read `rotated` before thread 0 clears it
  }
  if (!converged && tid == 0) atomicOr(info + blockIdx.x, kInfoNoConvergence);

  // Descending order; ties by index, so the padding index (last, eigenvalue 0) is never picked.
  float* values = values_batch + static_cast<std::size_t>(blockIdx.x) * rank;
  for (int i = tid; i < lp; i += threads) {
    const double lambda_i = g[packed_index(i, i)];
    int position = 0;
    for (int j = 0; j < lp; ++j) {
      const double lambda_j = g[packed_index(j, j)];
      if (lambda_j > lambda_i || (lambda_j == lambda_i && j < i)) ++position;
    }
    if (position < rank) {
      order[position] = i;
      values[position] = static_cast<float>(sqrt(fmax(lambda_i, 0.0)));
    }
  }
  __syncthreads();
  float* vectors = vectors_batch + static_cast<std::size_t>(blockIdx.x) * l * rank;
  for (int idx = tid; idx < l * rank; idx += threads) {
    const int r = idx % l;
    const int c = idx / l;
    vectors[idx] = w[static_cast<std::size_t>(order[c]) * lp + r];
  }
}

// ---------------------------------------------------------------------------------------------
// One block per (column, matrix).

__global__ void normalise_columns_kernel(float* matrices, int rows, int cols) {
  __shared__ double partial[kNormaliseThreads];
  float* column = matrices + (static_cast<std::size_t>(blockIdx.y) * cols + blockIdx.x) * rows;
  double sum = 0.0;
  for (int i = static_cast<int>(threadIdx.x); i < rows; i += kNormaliseThreads) {
    const double value = column[i];
    sum += value * value;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int width = kNormaliseThreads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  const double norm = sqrt(partial[0]);
  const bool usable = norm > 0.0 && isfinite(norm);
  const double scale = usable ? 1.0 / norm : 0.0;
  for (int i = static_cast<int>(threadIdx.x); i < rows; i += kNormaliseThreads) {
    column[i] = usable ? static_cast<float>(column[i] * scale) : 0.0F;
  }
}

// Above 48 KB a kernel must opt in to dynamic shared memory.
template <typename Kernel>
void allow_shared_bytes(Kernel kernel, std::size_t bytes) {
  SVDSERVE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
}

}  // namespace

std::size_t cholesky_shared_bytes(int l) {
  const auto side = static_cast<std::size_t>(l);
  return (side * side + 3 * side) * sizeof(double);
}

std::size_t jacobi_shared_bytes(int l) { return JacobiLayout(l).bytes; }

void fill_gaussian(float* out, std::size_t count, uint64_t seed, StreamView stream) {
  fill_gaussian_kernel<<<elementwise_blocks(count), kElementwiseThreads, 0, stream.value()>>>(
      out, count, seed);
  SVDSERVE_CUDA_CHECK_LAUNCH();
}

void widen_to_double(const float* in, double* out, std::size_t count, StreamView stream) {
  widen_kernel<<<elementwise_blocks(count), kElementwiseThreads, 0, stream.value()>>>(in, out,
                                                                                     count);
  SVDSERVE_CUDA_CHECK_LAUNCH();
}

void cholesky_inverse(const double* gram, float* r_inverse, int l, int count, int* info,
                      StreamView stream) {
  const std::size_t bytes = cholesky_shared_bytes(l);
  allow_shared_bytes(cholesky_inverse_kernel, bytes);
  cholesky_inverse_kernel<<<count, kCholeskyThreads, bytes, stream.value()>>>(gram, r_inverse, l,
                                                                              info);
  SVDSERVE_CUDA_CHECK_LAUNCH();
}

void jacobi_top_eigenpairs(const double* gram, int l, int rank, double tolerance,
                           float* singular_values, float* vectors, int count, int* info,
                           StreamView stream) {
  const std::size_t bytes = jacobi_shared_bytes(l);
  allow_shared_bytes(jacobi_kernel, bytes);
  jacobi_kernel<<<count, kJacobiThreads, bytes, stream.value()>>>(
      gram, l, rank, tolerance, singular_values, vectors, info);
  SVDSERVE_CUDA_CHECK_LAUNCH();
}

void normalise_columns(float* matrices, int rows, int cols, int count, StreamView stream) {
  const dim3 grid(static_cast<unsigned>(cols), static_cast<unsigned>(count));
  normalise_columns_kernel<<<grid, kNormaliseThreads, 0, stream.value()>>>(matrices, rows, cols);
  SVDSERVE_CUDA_CHECK_LAUNCH();
}

}  // namespace svdserve::gpu::rsvd
