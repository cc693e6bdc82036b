// cuBLAS's FP16 GEMM at the wgmma variant's shapes (f16_gemm_reference.hpp).

#include "bench/f16_gemm_reference.hpp"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/gpu/common/cuda_check.hpp"
#include "bench/bench_random.cuh"
#include "bench/event_timing.hpp"

namespace svdserve::bench {
namespace {

// Random FP16 values in [-1, 1) from each index.
__global__ void fill_random_f16_kernel(__half* __restrict__ out, std::size_t count,
                                       uint64_t seed) {
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = __float2half(2.0F * unit_hash(i, seed) - 1.0F);
  }
}

void fill_random(const gpu::DeviceBuffer& buffer, uint64_t seed, gpu::StreamView stream) {
  constexpr unsigned kBlocks = 4096;
  constexpr unsigned kThreads = 256;
  fill_random_f16_kernel<<<kBlocks, kThreads, 0, stream.value()>>>(
      buffer.as<__half>(), buffer.size() / sizeof(__half), seed);
  SVDSERVE_CUDA_CHECK(cudaGetLastError());
}

// C = A B, column-major, FP16 in and out, FP32 accumulation (tensor cores); `count` GEMMs whose
// operands follow each other at the given strides (in values).
void gemm_f16(cublasHandle_t cublas, uint32_t m, uint32_t n, uint32_t depth, const void* a,
              long long a_stride, const void* b, long long b_stride, void* c, long long c_stride,
              uint32_t count) {
  const float one = 1.0F;
  const float zero = 0.0F;
  const auto rows = static_cast<int>(m);
  const auto cols = static_cast<int>(n);
  const auto inner = static_cast<int>(depth);
  SVDSERVE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      cublas, CUBLAS_OP_N, CUBLAS_OP_N, rows, cols, inner, &one, a, CUDA_R_16F, rows, a_stride, b,
      CUDA_R_16F, inner, b_stride, &zero, c, CUDA_R_16F, rows, c_stride, static_cast<int>(count),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

F16GemmBatch::F16GemmBatch(uint32_t m, uint32_t n, uint32_t max_depth, uint32_t count,
                           gpu::StreamView stream)
    : m_(m),
      n_(n),
      max_depth_(max_depth),
      count_(count),
      a_(std::size_t{m} * max_depth * count * sizeof(__half)),
      b_(std::size_t{max_depth} * n * count * sizeof(__half)),
      c_(std::size_t{m} * n * count * sizeof(__half)),
      cublas_(stream) {
  fill_random(a_, 1, stream);
  fill_random(b_, 2, stream);
}

void F16GemmBatch::enqueue(uint32_t depth) const {
  // Each GEMM keeps its max_depth-sized operands; a shallower one reads the first columns of A
  // and the first rows of B (leading dimension = depth: a denser B, the same values count).
  gemm_f16(cublas_.value(), m_, n_, std::min(depth, max_depth_), a_.data(),
           static_cast<long long>(m_) * max_depth_, b_.data(),
           static_cast<long long>(max_depth_) * n_, c_.data(), static_cast<long long>(m_) * n_,
           count_);
}

double f16_gemm_square_tflops(uint32_t n, gpu::StreamView stream) {
  const F16GemmBatch gemm(n, n, n, 1, stream);
  constexpr int kRuns = 3;  // after one warm-up; the fastest counts
  const std::vector<double> times = time_ms(stream, kRuns, [&] { gemm.enqueue(n); });
  return 2.0 * n * static_cast<double>(n) * n / (times.front() * 1e-3) / 1e12;
}

}  // namespace svdserve::bench
