// The fused reconstruction kernels alone (batched, resident factors, u8 out), against their floor
// and against the cuBLAS oracle (SGEMM + quantise, tests/support), all measured in one run (the
// limits: kernel_limits.hpp):
//   - device-to-device bandwidth: cudaMemcpyAsync D2D of a large buffer, read + write bytes;
//     and, for reference, the write-only bandwidth of cudaMemsetAsync (what a kernel that only
//     writes could reach against the byte floor);
//   - FP32 FMA peak: a kernel of independent FMA chains on all SMs, 2 FLOPs per FMA (the
//     arithmetic of tile128 and rows); cuBLAS SGEMM 8192^3 (pedantic FP32) for reference;
//   - TF32 MMA peak: the same with mma.sync m16n8k8 TF32 chains (the instruction tensor uses; the
//     H100's dense TF32 peak through wgmma is higher, ~495 TFLOP/s, so this floor is the
//     instruction's, not the chip's);
//   - FP16 wgmma peak (sm_90 only): back-to-back wgmma m64n128k16 (FP32 accumulators) from
//     shared memory on every warpgroup, the instruction the wgmma variant uses; measured on
//     constant and on random operands, each time with the SM clock over the run (a check that
//     the operands' data does not change the limit: on the H100 it does not); the floor takes
//     the higher of the two. The same for TF32 (m64n128k8), the arithmetic of an earlier wgmma
//     kernel: the %fl_wg32 column holds wgmma's time against that floor, for comparison;
//   - not a floor: the wgmma variant's loop alone (wgmma_loop_alone.hpp: its two consumers'
//     wgmmas over a ring with its barriers and its rounding every channel, no copies or stores),
//     at k = 256 and 64 with its 5 stages and at k = 256 with 8, and at k = 64 draining without
//     rounding (what the rounding costs); per clock against the peak, it says how much of the
//     variant's distance to its floor the loop's own structure accounts for;
//   - not a floor: cuBLAS's FP16 GEMM (FP32 accumulation), square 8192^3, and per row at the wgmma
//     variant's MMA shape, h x w x 3k per image and channel, at ranks that are multiples of 16
//     (f16_gemm_reference.hpp): how close the library's own GEMM on the variant's arithmetic
//     comes to the MMA floor at that shape;
//   - per shape x rank, for each u8 variant that can run it (policy.hpp: rows at rank 1, wgmma on
//     sm_90a) and the cuBLAS oracle: time per batch (CUDA events,
//     median after warm-up), bytes moved (factor columns read + output written, once each),
//     FLOPs (2 h w k c), floor = max(bytes / D2D bandwidth, FLOPs / FMA peak), % of floor
//     (floor / time), speed-up over cuBLAS. tensor's floor counts the FLOPs it must run: three
//     MMAs per product (3xTF32, for FP32 accuracy), i.e. max(bytes / D2D, 3 FLOPs / TF32 peak);
//     wgmma's the same at the higher of the two FP16 wgmma peaks (3xFP16).
// Each image of a batch has its own factors (no cache reuse across images), and the batch is
// sized so the outputs total >= 256 MB (64 MB with --quick). Every fused result is compared with
// the cuBLAS result: at most 1 grey level apart, in at most 0.1% of the values; rows must agree
// with tile128 bit for bit (same summation order); tensor and wgmma sum in another order and are
// held to the cuBLAS agreement only. Before the table, the kernels' fast roundings
// (round_to_u8_bits, round_to_u8_packable) are checked against round_to_u8 on all 2^32 floats.
// Targets: "auto" (the variant the policy chooses) >= 1.5x cuBLAS SGEMM + quantise for k <= 64,
// and as fast as cuBLAS's own FP16 GEMM on the same MMAs (x_f16g, printed as a range). The % of
// floor columns say how far each row is from the hardware's limits.
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

#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/reconstruct/fused.hpp"
#include "kernels/gpu/reconstruct/output_tensor_map.hpp"
#include "kernels/gpu/reconstruct/policy.hpp"
#include "kernels/gpu/reconstruct/tile_io.cuh"
#include "kernels/gpu/reconstruct/wgmma_operands.hpp"
#include "kernels/gpu/reconstruct/wgmma_ptx.cuh"
#include "kernels/image.hpp"
#include "kernels/pixel_rounding.hpp"
#include "bench/bench_random.cuh"
#include "bench/event_timing.hpp"
#include "bench/f16_gemm_reference.hpp"
#include "bench/kernel_limits.hpp"
#include "tests/support/cublas_reference.hpp"

namespace {

using namespace svdserve;
using gpu::FusedVariant;
using gpu::ReconstructTask;
using bench::Limits;
using bench::WgmmaLoop;
using bench::median;
using bench::time_ms;
using bench::unit_hash;

constexpr uint32_t kThreads = 256;
constexpr double kMaxDisagreement = 1e-3;  // fraction of u8 values fused and cuBLAS may differ
constexpr double kSpeedupTarget = 1.5;
constexpr uint32_t kSpeedupTargetMaxRank = 64;
// The u8 variants; tile128 first: rows must match it byte for byte.
constexpr FusedVariant kVariants[] = {FusedVariant::tile128, FusedVariant::rows,
                                      FusedVariant::tensor, FusedVariant::wgmma};
// 3xTF32 or 3xFP16: big*big + big*small + small*big; as one GEMM, three times the depth.
constexpr uint32_t kTensorMmasPerProduct = 3;
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

struct VariantResult {
  bool ran = false;  // false: the variant cannot run this launch (policy.hpp)
  double ms = 0;
  Difference vs_cublas;
  bool identical_to_tile128 = true;
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
  double tf32_wgmma_ms = 0;  // the same at the TF32 wgmma peak
  double cublas_ms = 0;
  // cuBLAS's FP16 GEMM at the wgmma variant's MMA shape (f16_gemm_reference.hpp), not a floor;
  // 0 where it did not run (no wgmma, or a rank that is not a multiple of 16).
  double f16_gemm_ms = 0;
  FusedVariant chosen = FusedVariant::tile128;
  VariantResult variants[kVariantCount];

  [[nodiscard]] const VariantResult& result(FusedVariant v) const {
    for (std::size_t i = 0; i < kVariantCount; ++i) {
      if (kVariants[i] == v) return variants[i];
    }
    return variants[0];
  }
  [[nodiscard]] const VariantResult& automatic() const { return result(chosen); }
  // The floor of the arithmetic the variant uses (cuBLAS: FP32 FMA's, pedantic FP32).
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
  // wgmma's time against the TF32 wgmma floor: a kernel that got faster by changing its
  // arithmetic shows it here, while its own floor moved with the arithmetic.
  [[nodiscard]] double wgmma_percent_of_tf32_floor() const {
    const VariantResult& wgmma = result(FusedVariant::wgmma);
    if (!wgmma.ran || tf32_wgmma_ms == 0) return 0;
    return 100.0 * std::max(bandwidth_ms, tf32_wgmma_ms) / wgmma.ms;
  }
  [[nodiscard]] double auto_percent_of_floor() const {
    return percent_of_floor(chosen, automatic().ms);
  }
  [[nodiscard]] double cublas_percent_of_floor() const {
    return percent_of_floor(FusedVariant::tile128, cublas_ms);
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
          !v.identical_to_tile128) {
        return false;
      }
    }
    return true;
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
                            shape.height, shape.width, kTensorMmasPerProduct * rank_kept,
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
    // Every image has its wgmma operands, as on a server whose device runs wgmma.
    const gpu::ReconstructLaunch launch{.arch = gpu::current_reconstruct_arch(),
                                        .pixels = OutputPixels::u8,
                                        .max_rank = rank,
                                        .wgmma_operands = true};
    row.chosen = gpu::choose_variant(launch);

    const std::vector<ReconstructTask> cublas_tasks = tasks(rank, cublas_out_);
    row.cublas_ms = median(time_ms(stream_, repeats, [&] {
      reference::reconstruct_with_cublas(cublas_.value(), cublas_tasks, shape_, OutputPixels::u8,
                                         scratch_.as<float>(), stream_);
    }));

    const std::size_t values = out_bytes() * batch_;
    for (std::size_t v = 0; v < kVariantCount; ++v) {
      if (!gpu::can_implement(kVariants[v], launch)) continue;
      const std::vector<ReconstructTask> fused_tasks = tasks(rank, variant_out_[v]);
      SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(tasks_device_.data(), fused_tasks.data(),
                                          tasks_device_.size(), cudaMemcpyHostToDevice,
                                          stream_.value()));
      // Poison, so an output value the kernel never writes shows as a difference.
      SVDSERVE_CUDA_CHECK(cudaMemsetAsync(variant_out_[v].data(), 0xAB, values, stream_.value()));
      VariantResult& result = row.variants[v];
      result.ran = true;
      result.ms = median(time_ms(stream_, repeats, [&] {
        gpu::launch_fused_reconstruct(tasks_device_.as<ReconstructTask>(), batch_, shape_, launch,
                                      stream_, kVariants[v]);
      }));
      result.vs_cublas = compare_u8(variant_out_[v].data(), cublas_out_.data(), values, stream_);
      // tensor and wgmma sum in another order
      if (v > 0 && kVariants[v] != FusedVariant::tensor && kVariants[v] != FusedVariant::wgmma) {
        result.identical_to_tile128 =
            compare_u8(variant_out_[v].data(), variant_out_[0].data(), values, stream_)
                .differing == 0;
      }
    }
    // Where the variant's k-steps of 16 hold exactly k: the same MMA work as the GEMM's 3k.
    if (f16_gemm_ && row.result(FusedVariant::wgmma).ran && rank % kWgmmaStepDepth == 0) {
      row.f16_gemm_ms = median(time_ms(
          stream_, repeats, [&] { f16_gemm_->enqueue(kTensorMmasPerProduct * rank); }));
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
      // As the server does (gpu_reconstruct.cpp). Image b starts b images in, so where a row is
      // whole 16-byte chunks (what a map takes, with at least one whole tile column) so is
      // every image's start.
      gpu::encode_output_map(list.back(), shape_);
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
  std::printf("\n%-10s %2s %5s %4s %8s %5s %10s %10s %10s %10s %10s %8s %7s %7s %7s %7s %7s "
              "%7s %6s %8s %10s %9s %6s  %s\n",
              "shape", "c", "batch", "rank", "floor_ms", "bound", "tile128_ms", "rows_ms",
              "tensor_ms", "wgmma_ms", "cublas_ms", "auto", "%floor", "%fl_128", "%fl_row",
              "%fl_ten", "%fl_wg", "%fl_cub", "x_cub", "%fl_wg32", "f16gemm_ms", "%mma_f16g",
              "x_f16g",
              "check (max diff, differing vs cuBLAS: t128; rows; tensor; wgmma; FP32 "
              "variants identical)");
}

// "-" for a variant that cannot run the row's launch.
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
  for (const VariantResult& v : r.variants) identical = identical && v.identical_to_tile128;
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
  // wgmma_floor_tflops: the higher FP16 one, which the wgmma floors use.
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
       << ", \"wgmma_loops_alone\": [";
  for (std::size_t i = 0; i < limits.wgmma_loops.size(); ++i) {
    const WgmmaLoop& loop = limits.wgmma_loops[i];
    json << (i ? ", " : "") << "{\"stages\": " << loop.stages
         << ", \"channel_steps\": " << loop.channel_steps
         << ", \"rounds\": " << (loop.rounds ? "true" : "false")
         << ", \"tflops\": " << loop.peak.tflops
         << ", \"sm_ghz\": " << loop.peak.sm_ghz << "}";
  }
  json << "]"
       << ", \"wgmma_floor_tflops\": " << limits.wgmma_floor_tflops()
       << ", \"tensor_mmas_per_product\": " << kTensorMmasPerProduct
       << ", \"sgemm_tflops\": " << limits.sgemm_tflops
       << ", \"f16_gemm_tflops\": " << limits.f16_gemm_tflops
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
           << ", \"percent_of_fp32_floor\": " << r.percent_of_floor(FusedVariant::tile128, vr.ms)
           << ", \"speedup_vs_cublas\": " << r.cublas_ms / vr.ms
           << ", \"max_abs_diff_vs_cublas\": " << vr.vs_cublas.max_abs
           << ", \"differing_vs_cublas\": " << vr.vs_cublas.differing
           << ", \"identical_to_tile128\": " << (vr.identical_to_tile128 ? "true" : "false")
           << "}";
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
  std::printf("rounding (round_to_u8_bits and round_to_u8_packable vs round_to_u8, all 2^32 "
              "floats): %s (%llu differ)\n",
              mismatches == 0 ? "PASS" : "FAIL", mismatches);

  const Limits limits =
      bench::measure_kernel_limits(stream.view(), props.multiProcessorCount, options.quick);
  bench::print_kernel_limits(limits, options.quick, kTensorMmasPerProduct);

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
  double min_vs_f16_gemm = 0;
  double max_vs_f16_gemm = 0;
  int speedup_misses = 0;
  for (const Row& r : rows) {
    failures += r.correct() ? 0 : 1;
    if (const double x = r.wgmma_speedup_vs_f16_gemm(); x > 0) {
      min_vs_f16_gemm = min_vs_f16_gemm == 0 ? x : std::min(min_vs_f16_gemm, x);
      max_vs_f16_gemm = std::max(max_vs_f16_gemm, x);
    }
    speedup_misses += r.speedup_applies() && !r.meets_speedup_target() ? 1 : 0;
  }
  failures += mismatches == 0 ? 0 : 1;
  std::printf("\ncorrectness: %s (%d of %zu rows failed; rounding check %s)\n",
              failures == 0 ? "PASS" : "FAIL", failures - (mismatches == 0 ? 0 : 1), rows.size(),
              mismatches == 0 ? "passed" : "FAILED");
  if (max_vs_f16_gemm > 0) {
    std::printf("wgmma vs cuBLAS FP16 GEMM on the same MMAs: %.2f-%.2fx\n", min_vs_f16_gemm,
                max_vs_f16_gemm);
  }
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
