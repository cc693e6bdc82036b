// The kernel benchmark's limits (kernel_limits.hpp): the peak kernels, the copies and the cuBLAS
// GEMMs, and their printout.

#include "bench/kernel_limits.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/reconstruct/policy.hpp"
#include "kernels/gpu/reconstruct/tf32_mma.cuh"
#include "kernels/gpu/reconstruct/wgmma_ptx.cuh"
#include "bench/bench_random.cuh"
#include "bench/clocked_run.cuh"
#include "bench/event_timing.hpp"
#include "bench/f16_gemm_reference.hpp"

namespace svdserve::bench {
namespace {

constexpr uint32_t kThreads = 256;

// The square GEMMs' size (SGEMM and FP16): large enough for the libraries' best kernels.
constexpr uint32_t square_gemm_size(bool quick) { return quick ? 4096 : 8192; }

double d2d_gb_per_s(gpu::StreamView stream, bool quick) {
  const std::size_t bytes = (quick ? std::size_t{256} : std::size_t{1024}) << 20;
  gpu::DeviceBuffer from(bytes);
  gpu::DeviceBuffer to(bytes);
  SVDSERVE_CUDA_CHECK(cudaMemsetAsync(from.data(), 1, bytes, stream.value()));
  const auto times = time_ms(stream, 5, [&] {
    SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(to.data(), from.data(), bytes, cudaMemcpyDeviceToDevice,
                                        stream.value()));
  });
  return 2.0 * static_cast<double>(bytes) / (times.front() * 1e-3) / 1e9;  // read + write
}

// Write-only bandwidth (cudaMemsetAsync, the driver's own kernel): not a floor, a reference for
// the byte-bound rows, whose traffic is nearly all writes. What fraction of the D2D floor the
// fastest plain writer of those bytes reaches bounds what any kernel writing them can reach.
double memset_gb_per_s(gpu::StreamView stream, bool quick) {
  const std::size_t bytes = (quick ? std::size_t{256} : std::size_t{1024}) << 20;
  gpu::DeviceBuffer to(bytes);
  const auto times = time_ms(stream, 5, [&] {
    SVDSERVE_CUDA_CHECK(cudaMemsetAsync(to.data(), 1, bytes, stream.value()));
  });
  return static_cast<double>(bytes) / (times.front() * 1e-3) / 1e9;
}

constexpr int kFmaChains = 8;       // independent chains per thread: hides the FMA latency
constexpr int kFmaBlocksPerSm = 8;  // 2048 threads per SM

__global__ void __launch_bounds__(kThreads)
    fma_peak_kernel(float* __restrict__ out, float multiplier, float addend, uint32_t iterations) {
  float x[kFmaChains];
#pragma unroll
  for (int i = 0; i < kFmaChains; ++i) x[i] = static_cast<float>(threadIdx.x + i);
#pragma unroll 1
  for (uint32_t it = 0; it < iterations; it += 16) {
#pragma unroll
    for (int u = 0; u < 16; ++u) {
#pragma unroll
      for (int i = 0; i < kFmaChains; ++i) x[i] = fmaf(x[i], multiplier, addend);
    }
  }
  float sum = 0.0F;
#pragma unroll
  for (int i = 0; i < kFmaChains; ++i) sum += x[i];
  out[std::size_t{blockIdx.x} * blockDim.x + threadIdx.x] = sum;  // keeps the chains alive
}

double fma_peak_tflops(gpu::StreamView stream, int sms) {
  constexpr uint32_t kIterations = 1U << 17;  // ~10 ms on an H100
  const uint32_t blocks = static_cast<uint32_t>(sms * kFmaBlocksPerSm);
  gpu::DeviceBuffer out(std::size_t{blocks} * kThreads * sizeof(float));
  const auto times = time_ms(stream, 5, [&] {
    fma_peak_kernel<<<blocks, kThreads, 0, stream.value()>>>(out.as<float>(), 0.999999F, 1e-6F,
                                                             kIterations);
    SVDSERVE_CUDA_CHECK(cudaGetLastError());
  });
  const double flops = 2.0 * kFmaChains * kIterations * blocks * kThreads;
  return flops / (times.front() * 1e-3) / 1e12;
}

constexpr int kMmaChains = 8;       // independent accumulator tiles per warp
constexpr int kMmaBlocksPerSm = 4;  // 32 warps per SM, 8 per tensor core

__global__ void __launch_bounds__(kThreads) tf32_mma_peak_kernel(float* __restrict__ out,
                                                                 uint32_t operand,
                                                                 uint32_t iterations) {
  float acc[kMmaChains][4] = {};
#pragma unroll 1
  for (uint32_t it = 0; it < iterations; it += 16) {
#pragma unroll
    for (int u = 0; u < 16; ++u) {
#pragma unroll
      for (int c = 0; c < kMmaChains; ++c) {
        gpu::detail::mma_tf32(acc[c], operand, operand, operand, operand, operand, operand);
      }
    }
  }
  float sum = 0.0F;
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c) sum += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  out[std::size_t{blockIdx.x} * blockDim.x + threadIdx.x] = sum;  // keeps the chains alive
}

double tf32_mma_peak_tflops(gpu::StreamView stream, int sms) {
  constexpr uint32_t kIterations = 1U << 14;
  constexpr uint32_t kOperand = 0x3A800000;  // 2^-10: the sums stay finite
  const uint32_t blocks = static_cast<uint32_t>(sms * kMmaBlocksPerSm);
  gpu::DeviceBuffer out(std::size_t{blocks} * kThreads * sizeof(float));
  const auto times = time_ms(stream, 5, [&] {
    tf32_mma_peak_kernel<<<blocks, kThreads, 0, stream.value()>>>(out.as<float>(), kOperand,
                                                                  kIterations);
    SVDSERVE_CUDA_CHECK(cudaGetLastError());
  });
  constexpr uint32_t kWarpSize = 32;
  const double mmas = double{kMmaChains} * kIterations * blocks * (kThreads / kWarpSize);
  return mmas * gpu::detail::kMmaTf32Flops / (times.front() * 1e-3) / 1e12;
}

constexpr uint32_t kWgmmaBlocksPerSm = 2;  // 4 warpgroups per SM
constexpr uint32_t kWgmmasPerGroup = 4;

// Operands of the peak kernels: 2^-10 everywhere (no bit toggles between values), or random
// mantissas and signs at the same exponent (bits toggle between the values of one operand tile,
// which every wgmma then reuses; the sums stay finite either way).
enum class PeakOperands { constant, random };

// The arithmetic of a wgmma peak: FP16 (the wgmma variant's, k16) or TF32 (k8, the arithmetic of
// an earlier wgmma kernel, kept for comparison with its floor).
enum class WgmmaArithmetic { f16, tf32 };

#if SVDSERVE_HAS_WGMMA
// One 32-bit word of operands: a TF32 value, or two FP16 values, each 2^-10 with random sign and
// mantissa bits for PeakOperands::random.
__device__ __forceinline__ uint32_t peak_operand(uint32_t index, PeakOperands kind,
                                                 WgmmaArithmetic arithmetic) {
  constexpr uint32_t kTf32TwoToMinus10 = 0x3A800000;
  constexpr uint32_t kTf32SignAndMantissa = 0x807FFFFF;
  constexpr uint64_t kSeed = 12345;
  const bool f16 = arithmetic == WgmmaArithmetic::f16;
  if (kind == PeakOperands::constant) return f16 ? kF16PairTwoToMinus10 : kTf32TwoToMinus10;
  if (f16) return random_f16_pair(index, kSeed);
  const auto bits = static_cast<uint32_t>(splitmix64(index, kSeed));
  return (bits & kTf32SignAndMantissa) | kTf32TwoToMinus10;
}

#endif

// Each warpgroup keeps the tensor cores fed: a group of wgmmas per iteration into its
// accumulators, waiting only for the group before the last.
// One k-step is 32 bytes of a row in both arithmetics, so the operands and descriptors are the
// same; only the instruction and its FLOPs differ.
template <WgmmaArithmetic kArithmetic>
__global__ void __launch_bounds__(kThreads) wgmma_peak_kernel(float* __restrict__ out,
                                                              uint32_t iterations,
                                                              PeakOperands kind,
                                                              ClockSample* clock) {
#if SVDSERVE_HAS_WGMMA
  constexpr uint32_t kOperandWords =
      (gpu::detail::kWgmmaRows + gpu::detail::kWgmmaCols) * gpu::detail::kWgmmaDepth;
  __shared__ __align__(128) uint32_t operands[kOperandWords];
  for (uint32_t i = threadIdx.x; i < kOperandWords; i += blockDim.x) {
    operands[i] = peak_operand(i, kind, kArithmetic);
  }
  gpu::detail::fence_shared_for_wgmma();
  __syncthreads();
  sample_clock(clock, 0);
  constexpr uint32_t kLeading = gpu::detail::kKStepLeadingBytes;
  constexpr uint32_t kStride = gpu::detail::kKStepStrideBytes;
  const uint64_t a = gpu::detail::wgmma_descriptor(operands, kLeading, kStride);
  const uint64_t b = gpu::detail::wgmma_descriptor(
      operands + gpu::detail::kWgmmaRows * gpu::detail::kWgmmaDepth, kLeading, kStride);
  gpu::detail::WgmmaAccumulators acc = {};
#pragma unroll 1
  for (uint32_t it = 0; it < iterations; ++it) {
    gpu::detail::fence_wgmma_operands();
#pragma unroll
    for (uint32_t w = 0; w < kWgmmasPerGroup; ++w) {
      if constexpr (kArithmetic == WgmmaArithmetic::f16) {
        gpu::detail::wgmma_f16(acc, a, b, true);
      } else {
        gpu::detail::wgmma_tf32(acc, a, b, true);
      }
    }
    gpu::detail::commit_wgmma_group();
    gpu::detail::wait_wgmma<1>();
  }
  gpu::detail::wait_wgmma<0>();
  gpu::detail::pin_accumulators(acc);
  sample_clock(clock, 1);
  float sum = 0.0F;
#pragma unroll
  for (const float value : acc) sum += value;
  out[std::size_t{blockIdx.x} * blockDim.x + threadIdx.x] = sum;  // keeps the chains alive
#else
  (void)out;
  (void)iterations;
  (void)kind;
  (void)clock;
#endif
}

// 0 where the device cannot run the wgmma variant.
template <WgmmaArithmetic kArithmetic>
Peak wgmma_peak(gpu::StreamView stream, int sms, PeakOperands kind) {
  if (!gpu::fused_wgmma_supported()) return {};
  constexpr uint32_t kIterations = 1U << 14;
  const uint32_t blocks = static_cast<uint32_t>(sms) * kWgmmaBlocksPerSm;
  gpu::DeviceBuffer out(std::size_t{blocks} * kThreads * sizeof(float));
  gpu::DeviceBuffer clock(sizeof(ClockSample));
  const double wgmmas = double{kWgmmasPerGroup} * kIterations * blocks *
                        (kThreads / gpu::detail::kWarpgroupThreads);
  const double flops = wgmmas * (kArithmetic == WgmmaArithmetic::f16 ? gpu::detail::kWgmmaF16Flops
                                                                     : gpu::detail::kWgmmaFlops);
  return fastest_run(stream, flops, clock.as<ClockSample>(), [&] {
    wgmma_peak_kernel<kArithmetic><<<blocks, kThreads, 0, stream.value()>>>(
        out.as<float>(), kIterations, kind, clock.as<ClockSample>());
  });
}

__global__ void fill_uniform_kernel(float* __restrict__ out, std::size_t count, uint64_t seed) {
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = 2.0F * unit_hash(i, seed) - 1.0F;
  }
}

double sgemm_tflops(gpu::StreamView stream, bool quick) {
  const auto n = static_cast<int>(square_gemm_size(quick));
  const std::size_t values = std::size_t(n) * n;
  gpu::DeviceBuffer a(values * sizeof(float));
  gpu::DeviceBuffer b(values * sizeof(float));
  gpu::DeviceBuffer c(values * sizeof(float));
  constexpr unsigned kFillBlocks = 4096;
  fill_uniform_kernel<<<kFillBlocks, kThreads, 0, stream.value()>>>(a.as<float>(), values, 1);
  SVDSERVE_CUDA_CHECK(cudaGetLastError());
  fill_uniform_kernel<<<kFillBlocks, kThreads, 0, stream.value()>>>(b.as<float>(), values, 2);
  SVDSERVE_CUDA_CHECK(cudaGetLastError());
  const gpu::CublasHandle cublas(stream);
  SVDSERVE_CUBLAS_CHECK(cublasSetMathMode(cublas.value(), CUBLAS_PEDANTIC_MATH));  // plain FP32
  const float one = 1.0F;
  const float zero = 0.0F;
  const auto times = time_ms(stream, 3, [&] {
    SVDSERVE_CUBLAS_CHECK(cublasSgemm(cublas.value(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                                      a.as<float>(), n, b.as<float>(), n, &zero, c.as<float>(), n));
  });
  return 2.0 * n * static_cast<double>(n) * n / (times.front() * 1e-3) / 1e12;
}

}  // namespace

Limits measure_kernel_limits(gpu::StreamView stream, int sms, bool quick) {
  Limits limits;
  limits.d2d_gb_per_s = d2d_gb_per_s(stream, quick);
  limits.memset_gb_per_s = memset_gb_per_s(stream, quick);
  limits.fma_tflops = fma_peak_tflops(stream, sms);
  limits.tf32_mma_tflops = tf32_mma_peak_tflops(stream, sms);
  using enum WgmmaArithmetic;
  limits.f16_wgmma = wgmma_peak<f16>(stream, sms, PeakOperands::constant);
  limits.f16_wgmma_random = wgmma_peak<f16>(stream, sms, PeakOperands::random);
  limits.tf32_wgmma = wgmma_peak<tf32>(stream, sms, PeakOperands::constant);
  limits.tf32_wgmma_random = wgmma_peak<tf32>(stream, sms, PeakOperands::random);
  limits.wgmma_loops = measure_wgmma_loops_alone(stream, sms);
  limits.sgemm_tflops = sgemm_tflops(stream, quick);
  if (gpu::fused_wgmma_supported()) {
    limits.f16_gemm_tflops = f16_gemm_square_tflops(square_gemm_size(quick), stream);
  }
  return limits;
}

void print_kernel_limits(const Limits& limits, bool quick, double mmas_per_product) {
  const uint32_t square_gemm = square_gemm_size(quick);
  std::printf("D2D bandwidth (read + write): %.1f GB/s\n", limits.d2d_gb_per_s);
  std::printf("memset (write only):          %.1f GB/s (a write-only kernel at best %.0f%% of a "
              "byte floor)\n",
              limits.memset_gb_per_s, 100.0 * limits.memset_gb_per_s / limits.d2d_gb_per_s);
  std::printf("FP32 FMA peak (2 FLOPs/FMA):  %.2f TFLOP/s\n", limits.fma_tflops);
  std::printf("TF32 mma.sync peak:           %.2f TFLOP/s (tensor's floor: %.0f MMAs per "
              "product)\n",
              limits.tf32_mma_tflops, mmas_per_product);
  if (limits.f16_wgmma.tflops > 0) {
    std::printf("FP16 wgmma, constant operands: %.2f TFLOP/s, SM clock %.3f GHz\n",
                limits.f16_wgmma.tflops, limits.f16_wgmma.sm_ghz);
    std::printf("FP16 wgmma, random operands:   %.2f TFLOP/s, SM clock %.3f GHz\n",
                limits.f16_wgmma_random.tflops, limits.f16_wgmma_random.sm_ghz);
    std::printf("TF32 wgmma, constant operands: %.2f TFLOP/s, SM clock %.3f GHz\n",
                limits.tf32_wgmma.tflops, limits.tf32_wgmma.sm_ghz);
    std::printf("TF32 wgmma, random operands:   %.2f TFLOP/s, SM clock %.3f GHz\n",
                limits.tf32_wgmma_random.tflops, limits.tf32_wgmma_random.sm_ghz);
    // Per clock against the constant-operand peak (the floor's run): the loop's own cost with
    // the clock taken out (0 where a run sampled no clock).
    const auto per_ghz = [](const Peak& peak) {
      return peak.sm_ghz > 0 ? peak.tflops / peak.sm_ghz : 0.0;
    };
    const double peak_per_ghz = per_ghz(limits.f16_wgmma);
    for (const WgmmaLoop& loop : limits.wgmma_loops) {
      std::printf("FP16 wgmma, the wgmma variant's loop alone (not a floor; no copies or stores): "
                  "%u stages, %s every %u steps: %.2f TFLOP/s, SM clock %.3f GHz, %.1f%% of "
                  "the peak per clock\n",
                  loop.stages, loop.rounds ? "rounding" : "draining (no rounding)",
                  loop.channel_steps, loop.peak.tflops, loop.peak.sm_ghz,
                  peak_per_ghz > 0 ? 100.0 * per_ghz(loop.peak) / peak_per_ghz : 0.0);
    }
    std::printf("wgmma's floor:                 %.0f FP16 MMAs per product at %.2f TFLOP/s (the "
                "higher FP16 peak; %%fl_wg32: at the TF32 one)\n",
                mmas_per_product, limits.wgmma_floor_tflops());
  } else {
    std::printf("wgmma:                        not on this device (wgmma runs tensor)\n");
  }
  std::printf("cuBLAS SGEMM %u^3 (pedantic): %.2f TFLOP/s (%.0f%% of FMA peak)\n",
              square_gemm, limits.sgemm_tflops,
              100.0 * limits.sgemm_tflops / limits.fma_tflops);
  if (limits.f16_gemm_tflops > 0) {
    std::printf("cuBLAS FP16 GEMM %u^3 (FP32 accumulation; not a floor): %.2f TFLOP/s (%.0f%% of "
                "the FP16 wgmma floor's peak); per row, f16gemm_ms: the same GEMM at the wgmma "
                "variant's MMA shape (h x w x 3k per image and channel), %%mma_f16g its %% of "
                "the MMA floor, x_f16g wgmma's speed against it\n",
                square_gemm, limits.f16_gemm_tflops,
                100.0 * limits.f16_gemm_tflops / limits.wgmma_floor_tflops());
  }
}

}  // namespace svdserve::bench
