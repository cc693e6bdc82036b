// The fused reconstruction kernel alone (batched, resident factors, u8 out), against its floor and
// against the cuBLAS path (SGEMM + quantise), all measured in one run:
//   - device-to-device bandwidth: cudaMemcpyAsync D2D of a large buffer, read + write bytes;
//     and, for reference, the write-only bandwidth of cudaMemsetAsync (what a kernel that only
//     writes could reach against the byte floor);
//   - FP32 FMA peak: a kernel of independent FMA chains on all SMs, 2 FLOPs per FMA (the
//     arithmetic of tile64, tile128 and rows); cuBLAS SGEMM 8192^3 (pedantic FP32) for reference;
//   - TF32 MMA peak: the same with mma.sync m16n8k8 TF32 chains (the instruction tensor uses; the
//     H100's dense TF32 peak through wgmma is higher, ~495 TFLOP/s, so this floor is the
//     instruction's, not the chip's);
//   - FP16 wgmma peak (sm_90 only): back-to-back wgmma m64n128k16 (FP32 accumulators) from
//     shared memory on every warpgroup, the instruction the wgmma variant uses; measured on
//     constant and on random operands, each time with the SM clock over the run (a check that
//     the operands' data does not change the limit: on the H100 it does not); the floor takes
//     the higher of the two. The same for TF32 (m64n128k8), the variant's arithmetic in sessions
//     6-13: the %fl_wg32 column holds wgmma's time against that floor, for comparison;
//   - not a floor: the wgmma variant's loop alone on random operands (three register-A FP16
//     wgmmas a step, US re-read and split every step; no ring, barriers or epilogue), which says
//     how much of the variant's distance to its floor the loop's own instructions account for;
//   - not a floor: cuBLAS's FP16 GEMM (FP32 accumulation), square 8192^3, and per row at the wgmma
//     variant's MMA shape, h x w x 3k per image and channel, at ranks that are multiples of 16
//     (f16_gemm_reference.hpp): how close the library's own GEMM on the variant's arithmetic
//     comes to the MMA floor at that shape;
//   - per shape x rank, for each fused variant and the cuBLAS path: time per batch (CUDA events,
//     median after warm-up), bytes moved (factor columns read + output written, once each),
//     FLOPs (2 h w k c), floor = max(bytes / D2D bandwidth, FLOPs / FMA peak), % of floor
//     (floor / time), speed-up over cuBLAS. tensor's floor counts the FLOPs it must run: three
//     MMAs per product (3xTF32, for FP32 accuracy), i.e. max(bytes / D2D, 3 FLOPs / TF32 peak);
//     wgmma's the same at the higher of the two FP16 wgmma peaks (3xFP16).
// Each image of a batch has its own factors (no cache reuse across images), and the batch is
// sized so the outputs total >= 256 MB (64 MB with --quick). Every fused result is compared with
// the cuBLAS result: at most 1 grey level apart, in at most 0.1% of the values; the variants must
// agree with each other bit for bit (same summation order), except tensor, which sums in another
// order and is held to the cuBLAS agreement only. Before the table, the kernels' fast roundings
// (round_to_u8_bits, round_to_u8_packable) are checked against round_to_u8 on all 2^32 floats.
// Targets (from the performance issue): fused >= 80% of floor everywhere, >= 1.5x cuBLAS for
// k <= 64. "auto" is the variant launch_fused_reconstruct picks; targets are judged on it.
//
// usage: svdserve_reconstruct_bench [--quick] [--json FILE] [--channels N] [--size WxH] [--rank K]
// (--size: one shape of the table; --rank: any one rank instead of 1, 16, 64, 256; e.g. for ncu).
// Exit status: 0 when every correctness check passes (targets are reported, not enforced), 1 on a
// correctness failure, 2 on bad usage or no device.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "kernels/gpu/cuda_check.hpp"
#include "kernels/gpu/cuda_resources.hpp"
#include "kernels/gpu/reconstruct.hpp"
#include "kernels/gpu/reconstruct_tile_io.cuh"
#include "kernels/gpu/tf32_mma.cuh"
#include "kernels/gpu/wgmma_operands.hpp"
#include "kernels/gpu/wgmma.cuh"
#include "kernels/image.hpp"
#include "kernels/pixel_rounding.hpp"
#include "tests/bench/f16_gemm_reference.hpp"

namespace {

using namespace svdserve;
using gpu::FusedVariant;
using gpu::ReconstructTask;

constexpr uint32_t kThreads = 256;
constexpr double kMaxDisagreement = 1e-3;  // fraction of u8 values fused and cuBLAS may differ
constexpr double kFloorTarget = 0.8;
constexpr double kSpeedupTarget = 1.5;
constexpr uint32_t kSpeedupTargetMaxRank = 64;
constexpr FusedVariant kVariants[] = {FusedVariant::tile64, FusedVariant::tile128,
                                      FusedVariant::rows, FusedVariant::tensor,
                                      FusedVariant::wgmma};
constexpr double kTensorMmasPerProduct = 3;  // 3xTF32: big*big + big*small + small*big
constexpr uint32_t kGemmDepthPerRank = 3;     // the same three products as one GEMM's depth
constexpr uint32_t kWgmmaStepDepth = gpu::detail::kWgmmaF16Depth;  // k a step of the variant
constexpr std::size_t kVariantCount = std::size(kVariants);

struct Options {
  bool quick = false;
  std::string json_path;
  uint32_t channels = 3;
  uint32_t only_width = 0;  // --size WxH: just this shape (for profiling with ncu/nsys)
  uint32_t only_height = 0;
  uint32_t only_rank = 0;   // --rank K: just this rank
};

// ---------------------------------------------------------------------------------------------
// Timing: CUDA events on the work stream, after one warm-up; best or median of the repeats.

template <typename Enqueue>
std::vector<double> time_ms(gpu::StreamView stream, int repeats, Enqueue&& enqueue) {
  const gpu::Event start(true);
  const gpu::Event stop(true);
  enqueue();  // warm-up: module load, cuBLAS heuristics, caches
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    start.record(stream);
    enqueue();
    stop.record(stream);
    stop.synchronize();
    times.push_back(gpu::Event::elapsed_ms(start, stop));
  }
  std::sort(times.begin(), times.end());
  return times;
}

double median(const std::vector<double>& sorted) { return sorted[sorted.size() / 2]; }

// ---------------------------------------------------------------------------------------------
// Limits

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

// Deterministic pseudo-random bits from an index (splitmix64).
__device__ __forceinline__ uint64_t splitmix64(uint64_t index, uint64_t seed) {
  uint64_t z = index * 0x9E3779B97F4A7C15ULL + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The SM clock while a kernel ran: block 0's clock64 and the global timer, at its start and end.
struct ClockSample {
  unsigned long long cycles[2];
  unsigned long long ns[2];
};

#if SVDSERVE_HAS_WGMMA
__device__ __forceinline__ void sample_clock(ClockSample* sample, int at) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  unsigned long long ns = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  sample->cycles[at] = clock64();
  sample->ns[at] = ns;
}

#endif

// Operands of the peak kernels: 2^-10 everywhere (no bit toggles between values), or random
// mantissas and signs at the same exponent (bits toggle between the values of one operand tile,
// which every wgmma then reuses; the sums stay finite either way).
enum class PeakOperands { constant, random };

// The arithmetic of a wgmma peak: FP16 (the wgmma variant's, k16) or TF32 (its arithmetic until
// session 14, k8, kept for comparison with the earlier sessions' floors).
enum class WgmmaArithmetic { f16, tf32 };

#if SVDSERVE_HAS_WGMMA
// One 32-bit word of operands: a TF32 value, or two FP16 values, each 2^-10 with random sign and
// mantissa bits for PeakOperands::random.
__device__ __forceinline__ uint32_t peak_operand(uint32_t index, PeakOperands kind,
                                                 WgmmaArithmetic arithmetic) {
  constexpr uint32_t kTf32TwoToMinus10 = 0x3A800000;
  constexpr uint32_t kTf32SignAndMantissa = 0x807FFFFF;
  constexpr uint32_t kF16PairTwoToMinus10 = 0x14001400;
  constexpr uint32_t kF16PairSignAndMantissa = 0x83FF83FF;
  const bool f16 = arithmetic == WgmmaArithmetic::f16;
  const uint32_t two_to_minus_10 = f16 ? kF16PairTwoToMinus10 : kTf32TwoToMinus10;
  if (kind == PeakOperands::constant) return two_to_minus_10;
  const auto bits = static_cast<uint32_t>(splitmix64(index, /*seed=*/12345));
  return (bits & (f16 ? kF16PairSignAndMantissa : kTf32SignAndMantissa)) | two_to_minus_10;
}

#endif

// What the peak kernel issues: wgmmas only, groups of 4 from shared memory (the peak); or the
// wgmma variant's loop without what feeds it (no ring, copies, barriers or epilogue): per k-step
// three FP16 wgmmas with A in registers, which each thread re-reads from shared memory (two
// 16-byte loads) and splits into FP16 parts for the next step once the step before is done.
enum class WgmmaPattern { peak, kernel_loop };

template <WgmmaPattern kPattern>
constexpr uint32_t kWgmmasPerIteration = kPattern == WgmmaPattern::peak ? kWgmmasPerGroup : 3;

// Each warpgroup keeps the tensor cores fed: a group of wgmmas per iteration into its
// accumulators, waiting only for the group before the last.
// One k-step is 32 bytes of a row in both arithmetics, so the operands and descriptors are the
// same; only the instruction and its FLOPs differ.
template <WgmmaArithmetic kArithmetic, WgmmaPattern kPattern>
__global__ void __launch_bounds__(kThreads) wgmma_peak_kernel(float* __restrict__ out,
                                                              uint32_t iterations,
                                                              PeakOperands kind,
                                                              ClockSample* clock) {
#if SVDSERVE_HAS_WGMMA
  static_assert(kPattern == WgmmaPattern::peak || kArithmetic == WgmmaArithmetic::f16);
  constexpr uint32_t kOperandWords =
      (gpu::detail::kWgmmaRows + gpu::detail::kWgmmaCols) * gpu::detail::kWgmmaDepth;
  __shared__ __align__(128) uint32_t operands[kOperandWords];
  // kernel_loop: two steps of US, 8 FP32 values a thread each, as the variant's stages hold them
  // (the peak pattern leaves them unused).
  constexpr bool kLoop = kPattern == WgmmaPattern::kernel_loop;
  constexpr uint32_t kUsValues = 8;
  __shared__ __align__(128) float us[kLoop ? 2 : 1][kLoop ? kUsValues * kThreads : 1];
  for (uint32_t i = threadIdx.x; i < kOperandWords; i += blockDim.x) {
    operands[i] = peak_operand(i, kind, kArithmetic);
  }
  for (uint32_t i = threadIdx.x; kLoop && i < 2 * kUsValues * kThreads; i += blockDim.x) {
    (&us[0][0])[i] = __uint_as_float(peak_operand(i, kind, WgmmaArithmetic::tf32));
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
  if constexpr (kPattern == WgmmaPattern::peak) {
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
  } else {
    // Register set s holds step s's US (steps alternate between the two, as in the variant).
    uint32_t big[2][4];
    uint32_t small[2][4];
    const auto read_us = [&](uint32_t s) {
      const float4 lo = reinterpret_cast<const float4*>(us[s])[threadIdx.x];
      const float4 hi = reinterpret_cast<const float4*>(us[s])[kThreads + threadIdx.x];
      const float values[kUsValues] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
      for (uint32_t r = 0; r < 4; ++r) {
        const gpu::detail::SplitF16x2 parts =
            gpu::detail::split_f16x2(values[2 * r], values[2 * r + 1]);
        big[s][r] = parts.big;
        small[s][r] = parts.small;
      }
    };
    // V's two parts: b, and the 4 KiB from a (in the operands; FP16 values as well).
    const auto step = [&](uint32_t s) {
      gpu::detail::fence_wgmma_operands();
      gpu::detail::wgmma_f16(acc, small[s], b, true);
      gpu::detail::wgmma_f16(acc, big[s], a, true);
      gpu::detail::wgmma_f16(acc, big[s], b, true);
      gpu::detail::commit_wgmma_group();
      gpu::detail::wait_wgmma<1>();
      read_us(s ^ 1U);  // the other set's step is done: the step after this one
    };
    read_us(0);
    read_us(1);
#pragma unroll 1
    for (uint32_t it = 0; it < iterations; it += 2) {
      step(0);
      step(1);
    }
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

struct Peak {
  double tflops = 0;  // 0: not on this device
  double sm_ghz = 0;  // block 0's clock during that run (0: not sampled)
};

// 0 where the device cannot run the wgmma variant.
template <WgmmaArithmetic kArithmetic, WgmmaPattern kPattern = WgmmaPattern::peak>
Peak wgmma_peak(gpu::StreamView stream, int sms, PeakOperands kind) {
  if (!gpu::fused_wgmma_supported()) return {};
  constexpr uint32_t kIterations = 1U << 14;
  constexpr int kRuns = 5;  // after one warm-up; the fastest counts, with its own clock
  const uint32_t blocks = static_cast<uint32_t>(sms) * kWgmmaBlocksPerSm;
  gpu::DeviceBuffer out(std::size_t{blocks} * kThreads * sizeof(float));
  gpu::DeviceBuffer clock(sizeof(ClockSample));
  const gpu::Event start(true);
  const gpu::Event stop(true);
  const double wgmmas = double{kWgmmasPerIteration<kPattern>} * kIterations * blocks *
                        (kThreads / gpu::detail::kWarpgroupThreads);
  Peak peak;
  for (int run = -1; run < kRuns; ++run) {
    SVDSERVE_CUDA_CHECK(cudaMemsetAsync(clock.data(), 0, sizeof(ClockSample), stream.value()));
    start.record(stream);
    wgmma_peak_kernel<kArithmetic, kPattern><<<blocks, kThreads, 0, stream.value()>>>(
        out.as<float>(), kIterations, kind, clock.as<ClockSample>());
    SVDSERVE_CUDA_CHECK(cudaGetLastError());
    stop.record(stream);
    stop.synchronize();
    const double tflops =
        wgmmas *
        (kArithmetic == WgmmaArithmetic::f16 ? gpu::detail::kWgmmaF16Flops
                                             : gpu::detail::kWgmmaFlops) /
        (gpu::Event::elapsed_ms(start, stop) * 1e-3) / 1e12;
    ClockSample sample{};
    SVDSERVE_CUDA_CHECK(
        cudaMemcpy(&sample, clock.data(), sizeof(sample), cudaMemcpyDeviceToHost));
    if (run < 0 || tflops <= peak.tflops) continue;  // the warm-up, or not the fastest
    peak.tflops = tflops;
    peak.sm_ghz = sample.ns[1] > sample.ns[0]
                      ? static_cast<double>(sample.cycles[1] - sample.cycles[0]) /
                            static_cast<double>(sample.ns[1] - sample.ns[0])
                      : 0;  // no sample: the kernel body did not run
  }
  return peak;
}

// Deterministic pseudo-random floats in [0, 1) from an index.
__device__ __forceinline__ float unit_hash(uint64_t index, uint64_t seed) {
  return static_cast<float>(splitmix64(index, seed) >> 40) * (1.0F / 16777216.0F);
}

__global__ void fill_uniform_kernel(float* __restrict__ out, std::size_t count, uint64_t seed) {
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = 2.0F * unit_hash(i, seed) - 1.0F;
  }
}

double sgemm_tflops(gpu::StreamView stream, bool quick) {
  const int n = quick ? 4096 : 8192;
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

// ---------------------------------------------------------------------------------------------
// Factors like a photograph's (see tests/kernels/gpu_reconstruct_test.cpp): a positive rank-1
// base (pixels ~25..265, some clamp) plus signed terms of decaying scale (some go below 0).

struct FactorLayout {
  uint32_t height = 0;
  uint32_t width = 0;
  uint32_t channels = 0;
  uint32_t rank_kept = 0;
  [[nodiscard]] __host__ __device__ std::size_t us_floats() const {
    return std::size_t{channels} * height * rank_kept;
  }
  [[nodiscard]] __host__ __device__ std::size_t floats() const {
    return std::size_t{channels} * (std::size_t{height} + width) * rank_kept;
  }
};

__global__ void fill_factors_kernel(float* __restrict__ factors, FactorLayout layout,
                                    std::size_t images, uint64_t seed) {
  constexpr float kBaseLow = 40.0F;
  constexpr float kBaseSpan = 180.0F;
  constexpr float kBaseVLow = 0.6F;
  constexpr float kBaseVSpan = 0.6F;
  constexpr float kDetailScale = 100.0F;
  constexpr float kDetailDecay = 0.75F;
  const std::size_t per_image = layout.floats();
  const std::size_t total = per_image * images;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total;
       i += std::size_t{gridDim.x} * blockDim.x) {
    std::size_t within = i % per_image;
    const bool is_us = within < layout.us_floats();
    if (!is_us) within -= layout.us_floats();
    const std::size_t leading = is_us ? layout.height : layout.width;
    const auto k = static_cast<uint32_t>(within / leading % layout.rank_kept);
    const float u = unit_hash(i, seed);
    float value = 0.0F;
    if (k == 0) {
      value = is_us ? kBaseLow + kBaseSpan * u : kBaseVLow + kBaseVSpan * u;
    } else {
      const float scale = is_us ? kDetailScale / powf(static_cast<float>(k + 1), kDetailDecay) : 1.0F;
      value = scale * (2.0F * u - 1.0F);
    }
    factors[i] = value;
  }
}

// ---------------------------------------------------------------------------------------------
// Checking one u8 result against another, on the device

struct Difference {
  unsigned int max_abs = 0;
  unsigned long long differing = 0;
};

__global__ void compare_u8_kernel(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b,
                                  std::size_t count, Difference* __restrict__ result) {
  unsigned int worst = 0;
  unsigned long long differing = 0;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const int d = abs(int{a[i]} - int{b[i]});
    worst = max(worst, static_cast<unsigned int>(d));
    differing += d != 0 ? 1 : 0;
  }
  atomicMax(&result->max_abs, worst);
  if (differing != 0) atomicAdd(&result->differing, differing);
}

Difference compare_u8(const void* a, const void* b, std::size_t count, gpu::StreamView stream) {
  constexpr unsigned kBlocks = 2048;
  gpu::DeviceBuffer result(sizeof(Difference));
  SVDSERVE_CUDA_CHECK(cudaMemsetAsync(result.data(), 0, sizeof(Difference), stream.value()));
  compare_u8_kernel<<<kBlocks, kThreads, 0, stream.value()>>>(
      static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), count,
      result.as<Difference>());
  SVDSERVE_CUDA_CHECK(cudaGetLastError());
  Difference host;
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(&host, result.data(), sizeof(host), cudaMemcpyDeviceToHost,
                                      stream.value()));
  stream.synchronize();
  return host;
}

// ---------------------------------------------------------------------------------------------
// The fast rounding against the reference rule, on every float bit pattern

__global__ void count_rounding_mismatches_kernel(unsigned long long* __restrict__ mismatches) {
  unsigned long long local = 0;
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  for (uint64_t bits = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; bits <= UINT32_MAX;
       bits += stride) {
    const float value = __uint_as_float(static_cast<uint32_t>(bits));
    const uint32_t expected = round_to_u8(value);
    local += gpu::detail::round_to_u8_bits(value) != expected ? 1 : 0;
    local += (gpu::detail::round_to_u8_packable(value) & 0xFFU) != expected ? 1 : 0;
  }
  if (local != 0) atomicAdd(mismatches, local);
}

unsigned long long rounding_mismatches(gpu::StreamView stream) {
  constexpr unsigned kBlocks = 4096;
  gpu::DeviceBuffer result(sizeof(unsigned long long));
  SVDSERVE_CUDA_CHECK(cudaMemsetAsync(result.data(), 0, result.size(), stream.value()));
  count_rounding_mismatches_kernel<<<kBlocks, kThreads, 0, stream.value()>>>(
      result.as<unsigned long long>());
  SVDSERVE_CUDA_CHECK(cudaGetLastError());
  unsigned long long host = 0;
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(&host, result.data(), sizeof(host), cudaMemcpyDeviceToHost,
                                      stream.value()));
  stream.synchronize();
  return host;
}

// ---------------------------------------------------------------------------------------------
// One shape x rank

struct Limits {
  double d2d_gb_per_s = 0;
  double memset_gb_per_s = 0;
  double fma_tflops = 0;
  double tf32_mma_tflops = 0;
  Peak f16_wgmma;          // tflops 0: no wgmma on this device
  Peak f16_wgmma_random;   // the same on random operands (PeakOperands)
  Peak tf32_wgmma;         // for comparison with sessions 6-13, whose wgmma ran TF32
  Peak tf32_wgmma_random;
  // Not a floor: the wgmma variant's loop alone (WgmmaPattern::kernel_loop), on random operands
  // like the factors; how much of the distance to the floor its instructions account for.
  Peak f16_wgmma_kernel_loop;
  double sgemm_tflops = 0;
  double f16_gemm_tflops = 0;  // cuBLAS FP16 GEMM n^3, not a floor (0: no wgmma on this device)

  // wgmma's floor runs at the higher of its arithmetic's two peaks, since the chip reached it. In
  // every call of session 11 the constant-operand run (the first) read lower, at a lower clock
  // (TF32: 489.3-490.6 TFLOP/s at 1.806-1.815 GHz against 494.1-495.0); a floor on it made every
  // ratio look ~1 % better.
  [[nodiscard]] double wgmma_floor_tflops() const {
    return std::max(f16_wgmma.tflops, f16_wgmma_random.tflops);
  }
  [[nodiscard]] double tf32_wgmma_tflops() const {
    return std::max(tf32_wgmma.tflops, tf32_wgmma_random.tflops);
  }
};

struct VariantResult {
  bool ran = false;  // false: the variant does not apply to this rank
  double ms = 0;
  Difference vs_cublas;
  bool identical_to_tile64 = true;
};

struct Row {
  ImageShape shape;
  uint32_t batch = 0;
  uint32_t rank = 0;
  double bytes = 0;
  double flops = 0;
  double bandwidth_ms = 0;  // bytes / D2D bandwidth
  double fma_ms = 0;        // FLOPs / FP32 FMA peak
  double tensor_ms = 0;     // 3 x FLOPs / TF32 MMA peak
  double wgmma_ms = 0;      // 3 x FLOPs / the higher FP16 wgmma peak
  double tf32_wgmma_ms = 0;  // the same at the TF32 wgmma peak (sessions 6-13's floor)
  double cublas_ms = 0;
  // cuBLAS's FP16 GEMM at the wgmma variant's MMA shape (f16_gemm_reference.hpp), not a floor;
  // 0 where it did not run (no wgmma, or a rank that is not a multiple of 16).
  double f16_gemm_ms = 0;
  FusedVariant chosen = FusedVariant::tile64;
  VariantResult variants[kVariantCount];

  [[nodiscard]] const VariantResult& result(FusedVariant v) const {
    for (std::size_t i = 0; i < kVariantCount; ++i) {
      if (kVariants[i] == v) return variants[i];
    }
    return variants[0];
  }
  [[nodiscard]] const VariantResult& automatic() const { return result(chosen); }
  // The floor of the arithmetic the variant uses (cuBLAS: tile64's, pedantic FP32).
  [[nodiscard]] double floor_ms(FusedVariant v) const {
    const double arithmetic_ms = v == FusedVariant::tensor  ? tensor_ms
                                 : v == FusedVariant::wgmma ? wgmma_ms
                                                            : fma_ms;
    return std::max(bandwidth_ms, arithmetic_ms);
  }
  [[nodiscard]] bool floor_is_bandwidth(FusedVariant v) const {
    return floor_ms(v) == bandwidth_ms;
  }
  [[nodiscard]] double percent_of_floor(FusedVariant v, double ms) const {
    return 100.0 * floor_ms(v) / ms;
  }
  // wgmma's time against sessions 6-13's floor, when it ran TF32: a kernel that got faster by
  // changing its arithmetic shows it here, while its own floor moved with the arithmetic.
  [[nodiscard]] double wgmma_percent_of_tf32_floor() const {
    const VariantResult& wgmma = result(FusedVariant::wgmma);
    if (!wgmma.ran || tf32_wgmma_ms == 0) return 0;
    return 100.0 * std::max(bandwidth_ms, tf32_wgmma_ms) / wgmma.ms;
  }
  [[nodiscard]] double auto_percent_of_floor() const {
    return percent_of_floor(chosen, automatic().ms);
  }
  [[nodiscard]] double cublas_percent_of_floor() const {
    return percent_of_floor(FusedVariant::tile64, cublas_ms);
  }
  // cuBLAS's FP16 GEMM against the MMA floor alone (its C bytes are not the variant's), and the
  // wgmma variant's speed against it: 0 where it did not run.
  [[nodiscard]] double f16_gemm_percent_of_mma_floor() const {
    return f16_gemm_ms > 0 ? 100.0 * wgmma_ms / f16_gemm_ms : 0;
  }
  [[nodiscard]] double wgmma_speedup_vs_f16_gemm() const {
    const VariantResult& wgmma = result(FusedVariant::wgmma);
    return f16_gemm_ms > 0 && wgmma.ran ? f16_gemm_ms / wgmma.ms : 0;
  }
  [[nodiscard]] bool correct() const {
    const auto allowed = static_cast<unsigned long long>(
        kMaxDisagreement * static_cast<double>(batch) * static_cast<double>(shape.values()));
    for (const VariantResult& v : variants) {
      if (!v.ran) continue;
      if (v.vs_cublas.max_abs > 1 || v.vs_cublas.differing > std::max(1ULL, allowed) ||
          !v.identical_to_tile64) {
        return false;
      }
    }
    return true;
  }
  [[nodiscard]] bool meets_floor_target() const {
    return auto_percent_of_floor() >= 100.0 * kFloorTarget;
  }
  [[nodiscard]] bool speedup_applies() const { return rank <= kSpeedupTargetMaxRank; }
  [[nodiscard]] bool meets_speedup_target() const {
    return cublas_ms / automatic().ms >= kSpeedupTarget;
  }
};

class ShapeRun {
 public:
  ShapeRun(ImageShape shape, uint32_t rank_kept, uint32_t batch, gpu::StreamView stream)
      : shape_(shape),
        layout_{shape.height, shape.width, shape.channels, rank_kept},
        batch_(batch),
        stream_(stream),
        factors_(layout_.floats() * batch * sizeof(float)),
        cublas_out_(out_bytes() * batch),
        scratch_(shape.values() * sizeof(float)),
        tasks_device_(sizeof(ReconstructTask) * batch),
        operands_(operand_layout().bytes() * batch),
        cublas_(stream),
        f16_gemm_(gpu::fused_wgmma_supported()
                      ? std::make_unique<bench::F16GemmBatch>(
                            shape.height, shape.width, kGemmDepthPerRank * rank_kept,
                            batch * shape.channels, stream)
                      : nullptr) {
    constexpr unsigned kFillBlocks = 8192;
    fill_factors_kernel<<<kFillBlocks, kThreads, 0, stream.value()>>>(factors_.as<float>(),
                                                                      layout_, batch, 7);
    SVDSERVE_CUDA_CHECK(cudaGetLastError());
    // fill_factors_kernel's US stays under 256 and its V under 2: the operands' smallest scale.
    constexpr double kUsBound = 256.0;
    const int exponent = gpu::wgmma_operand_exponent(kUsBound).value();
    for (uint32_t b = 0; b < batch_; ++b) {
      gpu::write_wgmma_operands(us(b), v(b), operand_layout(), exponent, operands(b), stream_);
    }
    for (auto& out : variant_out_) out.reserve(out_bytes() * batch);
  }

  Row run(uint32_t rank, const Limits& limits, int repeats) {
    Row row;
    row.shape = shape_;
    row.batch = batch_;
    row.rank = rank;
    row.flops = 2.0 * static_cast<double>(shape_.values()) * rank * batch_;
    row.bytes = (static_cast<double>(shape_.channels) * rank * (shape_.height + shape_.width) *
                     sizeof(float) +
                 static_cast<double>(out_bytes())) *
                batch_;
    row.bandwidth_ms = row.bytes / (limits.d2d_gb_per_s * 1e9) * 1e3;
    row.fma_ms = row.flops / (limits.fma_tflops * 1e12) * 1e3;
    row.tensor_ms = kTensorMmasPerProduct * row.flops / (limits.tf32_mma_tflops * 1e12) * 1e3;
    if (limits.wgmma_floor_tflops() > 0) {
      row.wgmma_ms =
          kTensorMmasPerProduct * row.flops / (limits.wgmma_floor_tflops() * 1e12) * 1e3;
      row.tf32_wgmma_ms =
          kTensorMmasPerProduct * row.flops / (limits.tf32_wgmma_tflops() * 1e12) * 1e3;
    }
    row.chosen = gpu::fused_variant_for(FusedVariant::automatic, OutputPixels::u8, rank);

    const std::vector<ReconstructTask> cublas_tasks = tasks(rank, cublas_out_);
    row.cublas_ms = median(time_ms(stream_, repeats, [&] {
      gpu::reconstruct_with_cublas(cublas_.value(), cublas_tasks, shape_, OutputPixels::u8,
                                   scratch_.as<float>(), stream_);
    }));

    const std::size_t values = out_bytes() * batch_;
    for (std::size_t v = 0; v < kVariantCount; ++v) {
      if (gpu::fused_variant_for(kVariants[v], OutputPixels::u8, rank) != kVariants[v]) {
        continue;
      }
      const std::vector<ReconstructTask> fused_tasks = tasks(rank, variant_out_[v]);
      SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(tasks_device_.data(), fused_tasks.data(),
                                          tasks_device_.size(), cudaMemcpyHostToDevice,
                                          stream_.value()));
      // Poison, so an output value the kernel never writes shows as a difference.
      SVDSERVE_CUDA_CHECK(cudaMemsetAsync(variant_out_[v].data(), 0xAB, values, stream_.value()));
      VariantResult& result = row.variants[v];
      result.ran = true;
      result.ms = median(time_ms(stream_, repeats, [&] {
        gpu::launch_fused_reconstruct(tasks_device_.as<ReconstructTask>(), batch_, shape_,
                                      OutputPixels::u8, rank, stream_, kVariants[v]);
      }));
      result.vs_cublas = compare_u8(variant_out_[v].data(), cublas_out_.data(), values, stream_);
      // tensor and wgmma sum in another order
      if (v > 0 && kVariants[v] != FusedVariant::tensor && kVariants[v] != FusedVariant::wgmma) {
        result.identical_to_tile64 =
            compare_u8(variant_out_[v].data(), variant_out_[0].data(), values, stream_)
                .differing == 0;
      }
    }
    // Where the variant's k-steps of 16 hold exactly k: the same MMA work as the GEMM's 3k.
    if (f16_gemm_ && row.result(FusedVariant::wgmma).ran && rank % kWgmmaStepDepth == 0) {
      row.f16_gemm_ms = median(time_ms(
          stream_, repeats, [&] { f16_gemm_->enqueue(kGemmDepthPerRank * rank); }));
    }
    return row;
  }

 private:
  [[nodiscard]] std::size_t out_bytes() const { return shape_.values(); }

  [[nodiscard]] std::vector<ReconstructTask> tasks(uint32_t rank,
                                                   const gpu::DeviceBuffer& out) const {
    std::vector<ReconstructTask> list;
    for (uint32_t b = 0; b < batch_; ++b) {
      list.push_back({us(b), v(b), rank, layout_.rank_kept, out.as<std::byte>() + out_bytes() * b,
                      operands(b)});
    }
    return list;
  }
  [[nodiscard]] const float* us(uint32_t image) const {
    return factors_.as<float>() + layout_.floats() * image;
  }
  [[nodiscard]] const float* v(uint32_t image) const { return us(image) + layout_.us_floats(); }
  [[nodiscard]] std::byte* operands(uint32_t image) const {
    return operands_.as<std::byte>() + operand_layout().bytes() * image;
  }
  [[nodiscard]] gpu::WgmmaOperandLayout operand_layout() const {
    return {shape_, layout_.rank_kept};
  }

  ImageShape shape_;
  FactorLayout layout_;
  uint32_t batch_;
  gpu::StreamView stream_;
  gpu::DeviceBuffer factors_;
  gpu::DeviceBuffer cublas_out_;
  gpu::DeviceBuffer variant_out_[kVariantCount];
  gpu::DeviceBuffer scratch_;
  gpu::DeviceBuffer tasks_device_;
  gpu::DeviceBuffer operands_;
  gpu::CublasHandle cublas_;
  std::unique_ptr<bench::F16GemmBatch> f16_gemm_;  // null without wgmma
};

// ---------------------------------------------------------------------------------------------
// Output

void print_header() {
  std::printf("\n%-10s %2s %5s %4s %8s %5s %10s %10s %10s %10s %10s %10s %8s %7s %7s %7s %7s %7s "
              "%7s %7s %6s %8s %10s %9s %6s  %s\n",
              "shape", "c", "batch", "rank", "floor_ms", "bound", "tile64_ms", "tile128_ms",
              "rows_ms", "tensor_ms", "wgmma_ms", "cublas_ms", "auto", "%floor", "%fl_t64",
              "%fl_128", "%fl_row", "%fl_ten", "%fl_wg", "%fl_cub", "x_cub", "%fl_wg32",
              "f16gemm_ms", "%mma_f16g", "x_f16g",
              "check (max diff, differing vs cuBLAS: t64; t128; rows; tensor; wgmma; FP32 "
              "variants identical)");
}

// "-" for a variant that does not apply to the row's rank.
std::string cell(const VariantResult& v, double value, const char* format) {
  if (!v.ran) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

std::string difference_cell(const VariantResult& v) {
  if (!v.ran) return "-";
  return std::to_string(v.vs_cublas.max_abs) + ", " + std::to_string(v.vs_cublas.differing);
}

const char* bound_name(const Row& r, FusedVariant v) {
  if (r.floor_is_bandwidth(v)) return "bytes";
  return v == FusedVariant::tensor ? "tf32" : v == FusedVariant::wgmma ? "wgmma" : "fma";
}

void print_row(const Row& r) {
  const std::string shape = std::to_string(r.shape.width) + "x" + std::to_string(r.shape.height);
  bool identical = true;
  for (const VariantResult& v : r.variants) identical = identical && v.identical_to_tile64;
  std::string times;
  std::string percents;
  std::string checks;
  char field[24];
  for (std::size_t v = 0; v < kVariantCount; ++v) {
    const VariantResult& vr = r.variants[v];
    std::snprintf(field, sizeof(field), " %10s", cell(vr, vr.ms, "%.3f").c_str());
    times += field;
    std::snprintf(field, sizeof(field), " %7s",
                  cell(vr, r.percent_of_floor(kVariants[v], vr.ms), "%.1f%%").c_str());
    percents += field;
    checks += difference_cell(vr) + "; ";
  }
  // The FP16 GEMM reference's cells: "-" where it did not run.
  char gemm_ms[16] = "-";
  char gemm_percent[16] = "-";
  char gemm_speedup[16] = "-";
  if (r.f16_gemm_ms > 0) {
    std::snprintf(gemm_ms, sizeof(gemm_ms), "%.3f", r.f16_gemm_ms);
    std::snprintf(gemm_percent, sizeof(gemm_percent), "%.1f%%", r.f16_gemm_percent_of_mma_floor());
    std::snprintf(gemm_speedup, sizeof(gemm_speedup), "%.2f", r.wgmma_speedup_vs_f16_gemm());
  }
  std::printf("%-10s %2u %5u %4u %8.3f %5s%s %10.3f %8s %6.1f%%%s %6.1f%% %6.2f %7.1f%% %10s %9s "
              "%6s  %s (%s%s)\n",
              shape.c_str(), r.shape.channels, r.batch, r.rank, r.floor_ms(r.chosen),
              bound_name(r, r.chosen), times.c_str(), r.cublas_ms,
              gpu::fused_variant_name(r.chosen), r.auto_percent_of_floor(), percents.c_str(),
              r.cublas_percent_of_floor(), r.cublas_ms / r.automatic().ms,
              r.wgmma_percent_of_tf32_floor(), gemm_ms, gemm_percent, gemm_speedup,
              r.correct() ? "PASS" : "FAIL", checks.c_str(), identical ? "yes" : "NO");
}

void write_json(const std::string& path, const std::string& device, const Limits& limits,
                const std::vector<Row>& rows) {
  std::ofstream json(path);
  // *_wgmma_peak_*: the constant-operand runs (the keys are older than the random ones);
  // wgmma_floor_tflops: the higher FP16 one, which the wgmma floors use (sessions 6-13: TF32).
  json << "{\"device\": \"" << device << "\", \"d2d_gb_per_s\": " << limits.d2d_gb_per_s
       << ", \"memset_gb_per_s\": " << limits.memset_gb_per_s
       << ", \"fma_peak_tflops\": " << limits.fma_tflops
       << ", \"tf32_mma_peak_tflops\": " << limits.tf32_mma_tflops
       << ", \"f16_wgmma_peak_tflops\": " << limits.f16_wgmma.tflops
       << ", \"f16_wgmma_peak_sm_ghz\": " << limits.f16_wgmma.sm_ghz
       << ", \"f16_wgmma_random_tflops\": " << limits.f16_wgmma_random.tflops
       << ", \"f16_wgmma_random_sm_ghz\": " << limits.f16_wgmma_random.sm_ghz
       << ", \"tf32_wgmma_peak_tflops\": " << limits.tf32_wgmma.tflops
       << ", \"tf32_wgmma_peak_sm_ghz\": " << limits.tf32_wgmma.sm_ghz
       << ", \"tf32_wgmma_random_tflops\": " << limits.tf32_wgmma_random.tflops
       << ", \"tf32_wgmma_random_sm_ghz\": " << limits.tf32_wgmma_random.sm_ghz
       << ", \"f16_wgmma_kernel_loop_tflops\": " << limits.f16_wgmma_kernel_loop.tflops
       << ", \"f16_wgmma_kernel_loop_sm_ghz\": " << limits.f16_wgmma_kernel_loop.sm_ghz
       << ", \"wgmma_floor_tflops\": " << limits.wgmma_floor_tflops()
       << ", \"tensor_mmas_per_product\": " << kTensorMmasPerProduct
       << ", \"sgemm_tflops\": " << limits.sgemm_tflops
       << ", \"f16_gemm_tflops\": " << limits.f16_gemm_tflops
       << ", \"floor_target\": " << kFloorTarget
       << ", \"speedup_target\": " << kSpeedupTarget << ", \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    json << (i ? "," : "") << "\n {\"width\": " << r.shape.width << ", \"height\": "
         << r.shape.height << ", \"channels\": " << r.shape.channels << ", \"batch\": " << r.batch
         << ", \"rank\": " << r.rank << ", \"bytes\": " << r.bytes << ", \"flops\": " << r.flops
         << ", \"bandwidth_floor_ms\": " << r.bandwidth_ms << ", \"fma_floor_ms\": " << r.fma_ms
         << ", \"tensor_floor_ms\": " << r.tensor_ms << ", \"wgmma_floor_ms\": " << r.wgmma_ms
         << ", \"tf32_wgmma_floor_ms\": " << r.tf32_wgmma_ms
         << ", \"cublas_ms\": " << r.cublas_ms << ", \"f16_gemm_ms\": " << r.f16_gemm_ms
         << ", \"f16_gemm_percent_of_mma_floor\": " << r.f16_gemm_percent_of_mma_floor()
         << ", \"wgmma_speedup_vs_f16_gemm\": " << r.wgmma_speedup_vs_f16_gemm()
         << ", \"auto_variant\": \"" << gpu::fused_variant_name(r.chosen)
         << "\", \"auto_floor_ms\": " << r.floor_ms(r.chosen) << ", \"auto_floor_bound\": \""
         << bound_name(r, r.chosen) << "\", \"auto_ms\": " << r.automatic().ms
         << ", \"auto_percent_of_floor\": " << r.auto_percent_of_floor()
         << ", \"auto_speedup_vs_cublas\": " << r.cublas_ms / r.automatic().ms
         << ", \"cublas_percent_of_floor\": " << r.cublas_percent_of_floor()
         << ", \"correct\": " << (r.correct() ? "true" : "false")
         << ", \"meets_floor_target\": " << (r.meets_floor_target() ? "true" : "false")
         << ", \"meets_speedup_target\": "
         << (!r.speedup_applies() ? "null" : r.meets_speedup_target() ? "true" : "false")
         << ", \"variants\": {";
    bool first_variant = true;
    for (std::size_t v = 0; v < kVariantCount; ++v) {
      const VariantResult& vr = r.variants[v];
      if (!vr.ran) continue;
      json << (first_variant ? "" : ", ") << "\"" << gpu::fused_variant_name(kVariants[v])
           << "\": {\"ms\": " << vr.ms << ", \"floor_ms\": " << r.floor_ms(kVariants[v])
           << ", \"percent_of_floor\": " << r.percent_of_floor(kVariants[v], vr.ms)
           << ", \"percent_of_fp32_floor\": " << r.percent_of_floor(FusedVariant::tile64, vr.ms)
           << ", \"speedup_vs_cublas\": " << r.cublas_ms / vr.ms
           << ", \"max_abs_diff_vs_cublas\": " << vr.vs_cublas.max_abs
           << ", \"differing_vs_cublas\": " << vr.vs_cublas.differing
           << ", \"identical_to_tile64\": " << (vr.identical_to_tile64 ? "true" : "false") << "}";
      first_variant = false;
    }
    json << "}}";
  }
  json << "\n]}\n";
}

bool parse(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--json" && i + 1 < argc) {
      options.json_path = argv[++i];
    } else if (arg == "--channels" && i + 1 < argc) {
      options.channels = static_cast<uint32_t>(std::atoi(argv[++i]));
      if (options.channels < 1 || options.channels > 4) return false;
    } else if (arg == "--size" && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%ux%u", &options.only_width, &options.only_height) != 2) {
        return false;
      }
    } else if (arg == "--rank" && i + 1 < argc) {
      options.only_rank = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else {
      return false;
    }
  }
  return true;
}

int run(const Options& options) {
  const gpu::Stream stream;
  cudaDeviceProp props{};
  int device = 0;
  SVDSERVE_CUDA_CHECK(cudaGetDevice(&device));
  SVDSERVE_CUDA_CHECK(cudaGetDeviceProperties(&props, device));
  const std::string device_name = props.name;
  std::printf("device: %s, %d SMs\n", props.name, props.multiProcessorCount);

  const unsigned long long mismatches = rounding_mismatches(stream.view());
  std::printf("rounding (round_to_u8_bits and round_to_u8_packable vs round_to_u8, all 2^32 floats): %s (%llu differ)\n",
              mismatches == 0 ? "PASS" : "FAIL", mismatches);

  Limits limits;
  limits.d2d_gb_per_s = d2d_gb_per_s(stream.view(), options.quick);
  limits.memset_gb_per_s = memset_gb_per_s(stream.view(), options.quick);
  limits.fma_tflops = fma_peak_tflops(stream.view(), props.multiProcessorCount);
  limits.tf32_mma_tflops = tf32_mma_peak_tflops(stream.view(), props.multiProcessorCount);
  using enum WgmmaArithmetic;
  const int sms = props.multiProcessorCount;
  limits.f16_wgmma = wgmma_peak<f16>(stream.view(), sms, PeakOperands::constant);
  limits.f16_wgmma_random = wgmma_peak<f16>(stream.view(), sms, PeakOperands::random);
  limits.tf32_wgmma = wgmma_peak<tf32>(stream.view(), sms, PeakOperands::constant);
  limits.tf32_wgmma_random = wgmma_peak<tf32>(stream.view(), sms, PeakOperands::random);
  limits.f16_wgmma_kernel_loop =
      wgmma_peak<f16, WgmmaPattern::kernel_loop>(stream.view(), sms, PeakOperands::random);
  limits.sgemm_tflops = sgemm_tflops(stream.view(), options.quick);
  const uint32_t square_gemm = options.quick ? 4096 : 8192;
  if (gpu::fused_wgmma_supported()) {
    limits.f16_gemm_tflops = bench::f16_gemm_square_tflops(square_gemm, stream.view());
  }
  std::printf("D2D bandwidth (read + write): %.1f GB/s\n", limits.d2d_gb_per_s);
  std::printf("memset (write only):          %.1f GB/s (a write-only kernel at best %.0f%% of a "
              "byte floor)\n",
              limits.memset_gb_per_s, 100.0 * limits.memset_gb_per_s / limits.d2d_gb_per_s);
  std::printf("FP32 FMA peak (2 FLOPs/FMA):  %.2f TFLOP/s\n", limits.fma_tflops);
  std::printf("TF32 mma.sync peak:           %.2f TFLOP/s (tensor's floor: %.0f MMAs per "
              "product)\n",
              limits.tf32_mma_tflops, kTensorMmasPerProduct);
  if (limits.f16_wgmma.tflops > 0) {
    std::printf("FP16 wgmma, constant operands: %.2f TFLOP/s, SM clock %.3f GHz\n",
                limits.f16_wgmma.tflops, limits.f16_wgmma.sm_ghz);
    std::printf("FP16 wgmma, random operands:   %.2f TFLOP/s, SM clock %.3f GHz\n",
                limits.f16_wgmma_random.tflops, limits.f16_wgmma_random.sm_ghz);
    std::printf("TF32 wgmma, constant operands: %.2f TFLOP/s, SM clock %.3f GHz\n",
                limits.tf32_wgmma.tflops, limits.tf32_wgmma.sm_ghz);
    std::printf("TF32 wgmma, random operands:   %.2f TFLOP/s, SM clock %.3f GHz\n",
                limits.tf32_wgmma_random.tflops, limits.tf32_wgmma_random.sm_ghz);
    std::printf("FP16 wgmma, the wgmma variant's loop alone (random operands, not a floor): "
                "%.2f TFLOP/s, SM clock %.3f GHz\n",
                limits.f16_wgmma_kernel_loop.tflops, limits.f16_wgmma_kernel_loop.sm_ghz);
    std::printf("wgmma's floor:                 %.0f FP16 MMAs per product at %.2f TFLOP/s (the "
                "higher FP16 peak; %%fl_wg32: at the TF32 one, sessions 6-13's floor)\n",
                kTensorMmasPerProduct, limits.wgmma_floor_tflops());
  } else {
    std::printf("wgmma:                        not on this device (wgmma runs tensor)\n");
  }
  std::printf("cuBLAS SGEMM %d^3 (pedantic): %.2f TFLOP/s (%.0f%% of FMA peak)\n",
              options.quick ? 4096 : 8192, limits.sgemm_tflops,
              100.0 * limits.sgemm_tflops / limits.fma_tflops);
  if (limits.f16_gemm_tflops > 0) {
    std::printf("cuBLAS FP16 GEMM %u^3 (FP32 accumulation; not a floor): %.2f TFLOP/s (%.0f%% of "
                "the FP16 wgmma floor's peak); per row, f16gemm_ms: the same GEMM at the wgmma "
                "variant's MMA shape (h x w x 3k per image and channel), %%mma_f16g its %% of "
                "the MMA floor, x_f16g wgmma's speed against it\n",
                square_gemm, limits.f16_gemm_tflops,
                100.0 * limits.f16_gemm_tflops / limits.wgmma_floor_tflops());
  }

  struct Size {
    uint32_t width;
    uint32_t height;
  };
  constexpr Size kSizes[] = {{256, 256}, {1024, 1024}, {2048, 2048}, {4096, 4096}, {1920, 1080}};
  constexpr uint32_t kRanks[] = {1, 16, 64, 256};
  const std::size_t target_out_bytes = (options.quick ? std::size_t{64} : std::size_t{256}) << 20;
  const int repeats = options.quick ? 3 : 7;
  constexpr uint32_t kMaxBatch = 65535;  // one launch's grid

  print_header();
  std::vector<Row> rows;
  for (const Size size : kSizes) {
    if (options.only_width != 0 &&
        (size.width != options.only_width || size.height != options.only_height)) {
      continue;
    }
    const ImageShape shape{size.width, size.height, options.channels};
    std::vector<uint32_t> ranks;
    if (options.only_rank != 0) {
      if (options.only_rank <= shape.full_rank()) ranks.push_back(options.only_rank);
    } else {
      for (const uint32_t rank : kRanks) {
        if (rank <= shape.full_rank()) ranks.push_back(rank);
      }
    }
    if (ranks.empty()) continue;
    const auto batch = static_cast<uint32_t>(std::clamp<std::size_t>(
        (target_out_bytes + shape.values() - 1) / shape.values(), 1, kMaxBatch));
    ShapeRun shape_run(shape, *std::max_element(ranks.begin(), ranks.end()), batch, stream.view());
    for (const uint32_t rank : ranks) {
      rows.push_back(shape_run.run(rank, limits, repeats));
      print_row(rows.back());
      std::fflush(stdout);
    }
  }

  int failures = 0;
  int floor_misses = 0;
  int speedup_misses = 0;
  for (const Row& r : rows) {
    failures += r.correct() ? 0 : 1;
    floor_misses += r.meets_floor_target() ? 0 : 1;
    speedup_misses += r.speedup_applies() && !r.meets_speedup_target() ? 1 : 0;
  }
  failures += mismatches == 0 ? 0 : 1;
  std::printf("\ncorrectness: %s (%d of %zu rows failed; rounding check %s)\n",
              failures == 0 ? "PASS" : "FAIL", failures - (mismatches == 0 ? 0 : 1), rows.size(),
              mismatches == 0 ? "passed" : "FAILED");
  std::printf("target >= %.0f%% of floor (auto): %s (%d of %zu rows below)\n",
              100.0 * kFloorTarget, floor_misses == 0 ? "MET" : "MISSED", floor_misses,
              rows.size());
  std::printf("target >= %.1fx cuBLAS for k <= %u (auto): %s (%d rows below)\n", kSpeedupTarget,
              kSpeedupTargetMaxRank, speedup_misses == 0 ? "MET" : "MISSED", speedup_misses);
  if (!options.json_path.empty()) write_json(options.json_path, device_name, limits, rows);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: svdserve_reconstruct_bench [--quick] [--json FILE] [--channels 1..4] "
                 "[--size WxH] [--rank K]\n");
    return 2;
  }
  if (!gpu::cuda_device_available()) {
    std::fprintf(stderr, "no CUDA device\n");
    return 2;
  }
  try {
    return run(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
