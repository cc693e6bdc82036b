// The fused reconstruction kernels and the cuBLAS oracle (tests/support) against a float64 host
// reference: sum_k US[i, k] V[j, k] in double over the same fp32 factors, so the tolerances
// measure the kernels alone.
//
// Tolerances:
//  - f32 output: ||out - ref||_F <= 1e-5 ||ref||_F (fp32 accumulation of at most 512 terms of a
//    decaying spectrum; the error is a few ulps of the partial sums, ~1e-7 relative);
//  - u8 output: within 1 grey level of the reference rounded by the same rule (clamp, half up);
//  - fused vs cuBLAS u8: they sum in different orders, so a value within a few ulps of a .5
//    boundary may round either way. Differences must be exactly 1 level and at most 0.1% of the
//    values (at least one allowed, for the tiny images);
//  - the FP32 fused variants (tile128, and rows at rank 1) sum in the same order: their u8
//    outputs must be identical; tensor and wgmma sum in another and are held to the cuBLAS
//    agreement.
// Every fused variant runs on every case it can implement (policy.hpp: tile64 is the f32 one,
// rows runs rank 1, wgmma an sm_90a device), and the cuBLAS oracle on every case, u8 and f32.
// Every output value is checked to be written: u8 runs twice, over poison bytes 0xAB and 0x54,
// and both runs must agree; f32 runs over all-ones bytes (a NaN) and must hold no NaN. Guard
// bytes before and after the outputs must keep their poison.
// Skips in SetUp without a CUDA device (CTest label gpu); on a GPU machine it must run.

#include <gtest/gtest.h>
#include <cuda_runtime_api.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <ostream>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/reconstruct/fused.hpp"
#include "kernels/gpu/reconstruct/output_tensor_map.hpp"
#include "kernels/gpu/reconstruct/policy.hpp"
#include "kernels/gpu/reconstruct/wgmma_operands.hpp"
#include "kernels/image.hpp"
#include "reference_svd.hpp"
#include "test_images.hpp"
#include "tests/support/cublas_reference.hpp"

namespace svdserve::test {
namespace {

using gpu::ReconstructTask;

constexpr double kF32RelativeTolerance = 1e-5;
constexpr int kU8Tolerance = 1;
constexpr double kMaxPathDisagreement = 1e-3;  // fraction of u8 values fused and cuBLAS may differ
constexpr uint8_t kPoisonA = 0xAB;
constexpr uint8_t kPoisonB = 0x54;
constexpr uint8_t kPoisonNaN = 0xFF;  // 0xFFFFFFFF is a NaN
constexpr std::size_t kGuardBytes = 64;
constexpr double kMaxU8 = 255.0;

// ---------------------------------------------------------------------------------------------
// Factors on the host, in the device layout of fused.hpp

struct HostFactors {
  ImageShape shape;
  uint32_t rank_kept = 0;
  std::vector<float> us;  // per channel: height x rank_kept, column-major
  std::vector<float> v;   // per channel: width x rank_kept, column-major

  [[nodiscard]] float us_at(uint32_t c, uint32_t i, uint32_t k) const {
    return us[(std::size_t{c} * rank_kept + k) * shape.height + i];
  }
  [[nodiscard]] float v_at(uint32_t c, uint32_t j, uint32_t k) const {
    return v[(std::size_t{c} * rank_kept + k) * shape.width + j];
  }
};

// A decaying spectrum like a photograph's: a positive rank-1 base (about 25..265, so some values
// clamp at 255) plus signed terms of shrinking scale that push others below 0.
HostFactors random_factors(ImageShape shape, uint32_t rank_kept, uint64_t seed) {
  constexpr float kBaseLow = 40.0F;
  constexpr float kBaseHigh = 220.0F;
  constexpr float kBaseVLow = 0.6F;
  constexpr float kBaseVHigh = 1.2F;
  constexpr float kDetailScale = 100.0F;
  constexpr float kDetailDecay = 0.75F;
  std::mt19937_64 generator(seed);
  HostFactors f{shape, rank_kept, std::vector<float>(std::size_t{shape.channels} * shape.height * rank_kept),
                std::vector<float>(std::size_t{shape.channels} * shape.width * rank_kept)};
  for (uint32_t c = 0; c < shape.channels; ++c) {
    for (uint32_t k = 0; k < rank_kept; ++k) {
      const float scale = kDetailScale / std::pow(static_cast<float>(k + 1), kDetailDecay);
      std::uniform_real_distribution<float> us_value =
          k == 0 ? std::uniform_real_distribution<float>(kBaseLow, kBaseHigh)
                 : std::uniform_real_distribution<float>(-scale, scale);
      std::uniform_real_distribution<float> v_value =
          k == 0 ? std::uniform_real_distribution<float>(kBaseVLow, kBaseVHigh)
                 : std::uniform_real_distribution<float>(-1.0F, 1.0F);
      for (uint32_t i = 0; i < shape.height; ++i) {
        f.us[(std::size_t{c} * rank_kept + k) * shape.height + i] = us_value(generator);
      }
      for (uint32_t j = 0; j < shape.width; ++j) {
        f.v[(std::size_t{c} * rank_kept + k) * shape.width + j] = v_value(generator);
      }
    }
  }
  return f;
}

// US = U diag(S) and V = Vt^T of a float64 SVD, rounded to fp32 as the GPU backend holds them.
HostFactors factors_from_image(const ImageF32& image) {
  const ImageShape& shape = image.shape;
  const uint32_t rank = shape.full_rank();
  HostFactors f{shape, rank, std::vector<float>(std::size_t{shape.channels} * shape.height * rank),
                std::vector<float>(std::size_t{shape.channels} * shape.width * rank)};
  for (uint32_t c = 0; c < shape.channels; ++c) {
    const ReferenceSvd svd = reference_svd(image.plane(c), shape.height, shape.width);
    for (uint32_t k = 0; k < rank; ++k) {
      for (uint32_t i = 0; i < shape.height; ++i) {
        f.us[(std::size_t{c} * rank + k) * shape.height + i] =
            static_cast<float>(svd.u[std::size_t{i} * rank + k] * svd.singular_values[k]);
      }
      for (uint32_t j = 0; j < shape.width; ++j) {
        f.v[(std::size_t{c} * rank + k) * shape.width + j] =
            static_cast<float>(svd.vt[std::size_t{k} * shape.width + j]);
      }
    }
  }
  return f;
}

// The rank-k image in double, interleaved (HWC) like the outputs.
std::vector<double> reference_hwc(const HostFactors& f, uint32_t rank) {
  const ImageShape& shape = f.shape;
  std::vector<double> out(shape.values());
  std::vector<double> row(shape.width);
  for (uint32_t c = 0; c < shape.channels; ++c) {
    for (uint32_t i = 0; i < shape.height; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (uint32_t k = 0; k < rank; ++k) {
        const double u = f.us_at(c, i, k);
        const float* v_column = f.v.data() + (std::size_t{c} * f.rank_kept + k) * shape.width;
        for (uint32_t j = 0; j < shape.width; ++j) row[j] += u * double{v_column[j]};
      }
      for (uint32_t j = 0; j < shape.width; ++j) {
        out[(std::size_t{i} * shape.width + j) * shape.channels + c] = row[j];
      }
    }
  }
  return out;
}

uint8_t rounded_reference(double value) {
  return static_cast<uint8_t>(std::floor(std::clamp(value, 0.0, kMaxU8) + 0.5));
}

std::string position(const ImageShape& shape, std::size_t index) {
  const std::size_t pixel = index / shape.channels;
  std::ostringstream text;
  text << "row " << pixel / shape.width << ", column " << pixel % shape.width << ", channel "
       << index % shape.channels;
  return text.str();
}

// ---------------------------------------------------------------------------------------------
// Running the fused variants and the oracle

enum class Path { fused_tile64, fused_tile128, fused_rows, fused_tensor, fused_wgmma, cublas };
constexpr Path kPaths[] = {Path::fused_tile64, Path::fused_tile128, Path::fused_rows,
                           Path::fused_tensor, Path::fused_wgmma, Path::cublas};

// The FP32 variants sum in the same order and must give identical bytes; tensor and wgmma
// (3xTF32, 3xFP16) sum in another, so they are held to the cuBLAS agreement instead.
bool sums_in_fp32_order(Path path) {
  return path == Path::fused_tile64 || path == Path::fused_tile128 || path == Path::fused_rows;
}

const char* path_name(Path path) {
  switch (path) {
    case Path::fused_tile64: return "fused tile64";
    case Path::fused_tile128: return "fused tile128";
    case Path::fused_rows: return "fused rows";
    case Path::fused_tensor: return "fused tensor";
    case Path::fused_wgmma: return "fused wgmma";
    case Path::cublas: return "cuBLAS";
  }
  return "?";
}

gpu::FusedVariant variant_of(Path path) {
  switch (path) {
    case Path::fused_tile64: return gpu::FusedVariant::tile64;
    case Path::fused_tile128: return gpu::FusedVariant::tile128;
    case Path::fused_rows: return gpu::FusedVariant::rows;
    case Path::fused_tensor: return gpu::FusedVariant::tensor;
    case Path::fused_wgmma: return gpu::FusedVariant::wgmma;
    case Path::cublas: break;
  }
  return gpu::FusedVariant::automatic;
}

// A launch on this device of tasks that all have their wgmma operands (upload writes them).
gpu::ReconstructLaunch launch_of(OutputPixels pixels, std::span<const uint32_t> ranks) {
  return {.arch = gpu::current_reconstruct_arch(),
          .pixels = pixels,
          .max_rank = *std::ranges::max_element(ranks),
          .wgmma_operands = true};
}

// Whether `path` runs a launch of these outputs and ranks on this device.
bool runs(Path path, OutputPixels pixels, std::span<const uint32_t> ranks) {
  return path == Path::cublas || gpu::can_implement(variant_of(path), launch_of(pixels, ranks));
}

struct DeviceFactors {
  gpu::DeviceBuffer us;
  gpu::DeviceBuffer v;
  gpu::DeviceBuffer wgmma_operands;  // written from us and v on the device, as decompose does
  uint32_t rank_kept = 0;
};

// One run's outputs as bytes: [guard][lead][task 0][task 1]...[guard], all poisoned first.
// `lead` shifts every output off 16-byte alignment; u8 outputs of odd size shift each other too.
struct RunOutput {
  std::vector<uint8_t> bytes;
  std::size_t first_output = 0;
  std::size_t bytes_per_output = 0;
  std::size_t outputs = 0;
  std::size_t output_maps = 0;  // tasks whose output map was encoded

  [[nodiscard]] std::span<const uint8_t> u8(std::size_t task) const {
    return std::span(bytes).subspan(first_output + task * bytes_per_output, bytes_per_output);
  }
  [[nodiscard]] std::vector<float> f32(std::size_t task) const {
    std::vector<float> values(bytes_per_output / sizeof(float));
    std::memcpy(values.data(), bytes.data() + first_output + task * bytes_per_output,
                bytes_per_output);
    return values;
  }
  // Bytes outside the outputs that no longer hold `poison`.
  [[nodiscard]] std::size_t disturbed_guard_bytes(uint8_t poison) const {
    const std::size_t end = first_output + outputs * bytes_per_output;
    const auto changed = [poison](uint8_t b) { return b != poison; };
    return static_cast<std::size_t>(
        std::count_if(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(first_output), changed) +
        std::count_if(bytes.begin() + static_cast<std::ptrdiff_t>(end), bytes.end(), changed));
  }
};

class GpuReconstructTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    stream_.emplace();
    cublas_.emplace(stream_->view());
  }

  [[nodiscard]] gpu::StreamView stream() const { return stream_->view(); }

  [[nodiscard]] static bool wgmma_runs() {
    const uint32_t ranks[] = {1};
    return runs(Path::fused_wgmma, OutputPixels::u8, ranks);
  }

  // Which u8 tasks get an output tensor map (the wgmma kernel stores their whole tile columns'
  // tiles by tensor stores, the rest by its threads; the other paths ignore it). Where the
  // output allows one.
  enum class OutputMaps { all, none, two_in_three };
  OutputMaps output_maps_ = OutputMaps::all;
  // check_batch asserts that every task gets_output_map names got one (else the wgmma kernel
  // would quietly store all by its threads).
  bool expect_output_maps_ = false;
  [[nodiscard]] bool gets_output_map(std::size_t task) const {
    return output_maps_ == OutputMaps::all ||
           (output_maps_ == OutputMaps::two_in_three && task % 3 != 0);
  }

  DeviceFactors upload(const HostFactors& f) {
    const gpu::WgmmaOperandLayout layout{f.shape, f.rank_kept};
    DeviceFactors d{gpu::DeviceBuffer(f.us.size() * sizeof(float)),
                    gpu::DeviceBuffer(f.v.size() * sizeof(float)),
                    gpu::DeviceBuffer(layout.bytes()), f.rank_kept};
    SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(d.us.data(), f.us.data(), d.us.size(),
                                        cudaMemcpyHostToDevice, stream().value()));
    SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(d.v.data(), f.v.data(), d.v.size(),
                                        cudaMemcpyHostToDevice, stream().value()));
    // Poisoned first: operands the writer misses show as wrong pixels.
    SVDSERVE_CUDA_CHECK(cudaMemsetAsync(d.wgmma_operands.data(), 0x7F, d.wgmma_operands.size(),
                                        stream().value()));
    double us_bound = 0.0;
    for (const float value : f.us) us_bound = std::max(us_bound, double{std::abs(value)});
    gpu::write_wgmma_operands(d.us.as<float>(), d.v.as<float>(), layout,
                              gpu::wgmma_operand_exponent(us_bound).value(),
                              d.wgmma_operands.data(), stream());
    stream().synchronize();
    return d;
  }

  RunOutput run(Path path, const std::vector<const DeviceFactors*>& factors,
                std::span<const uint32_t> ranks, const ImageShape& shape, OutputPixels pixels,
                std::size_t lead_bytes, uint8_t poison) {
    RunOutput result;
    result.outputs = factors.size();
    result.bytes_per_output = shape.values() * bytes_per_value(pixels);
    result.first_output = kGuardBytes + lead_bytes;
    result.bytes.resize(result.first_output + result.outputs * result.bytes_per_output +
                        kGuardBytes);
    gpu::DeviceBuffer arena(result.bytes.size());
    SVDSERVE_CUDA_CHECK(cudaMemsetAsync(arena.data(), poison, arena.size(), stream().value()));

    std::vector<ReconstructTask> tasks;
    for (std::size_t t = 0; t < factors.size(); ++t) {
      tasks.push_back({factors[t]->us.as<float>(), factors[t]->v.as<float>(), ranks[t],
                       factors[t]->rank_kept,
                       arena.as<std::byte>() + result.first_output + t * result.bytes_per_output,
                       factors[t]->wgmma_operands.data()});
      if (pixels == OutputPixels::u8 && gets_output_map(t) &&
          gpu::encode_output_map(tasks.back(), shape)) {
        ++result.output_maps;
      }
    }
    gpu::DeviceBuffer tasks_device(tasks.size() * sizeof(ReconstructTask));
    gpu::DeviceBuffer scratch(shape.values() * sizeof(float));
    if (path != Path::cublas) {
      SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(tasks_device.data(), tasks.data(), tasks_device.size(),
                                          cudaMemcpyHostToDevice, stream().value()));
      gpu::launch_fused_reconstruct(tasks_device.as<ReconstructTask>(),
                                    static_cast<uint32_t>(tasks.size()), shape,
                                    launch_of(pixels, ranks), stream(), variant_of(path));
    } else {
      reference::reconstruct_with_cublas(cublas_->value(), tasks, shape, pixels,
                                         scratch.as<float>(), stream());
    }
    SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(result.bytes.data(), arena.data(), arena.size(),
                                        cudaMemcpyDeviceToHost, stream().value()));
    stream().synchronize();
    EXPECT_EQ(result.disturbed_guard_bytes(poison), 0U)
        << path_name(path) << " wrote outside its outputs";
    return result;
  }

  // Runs every path that can over a batch (one launch each) and checks every output against
  // `references`, the u8 outputs of the fused variants against the oracle's, and those of the
  // FP32 variants against each other.
  void check_batch(const ImageShape& shape, const std::vector<HostFactors>& host,
                   std::span<const uint32_t> ranks, std::size_t lead_values) {
    std::vector<DeviceFactors> device;
    std::vector<std::vector<double>> references;
    for (std::size_t t = 0; t < host.size(); ++t) {
      device.push_back(upload(host[t]));
      references.push_back(reference_hwc(host[t], ranks[t]));
    }
    std::vector<const DeviceFactors*> pointers;
    for (const DeviceFactors& d : device) pointers.push_back(&d);

    struct U8Output {
      Path path;
      RunOutput output;
    };
    std::vector<U8Output> u8_outputs;
    std::size_t f32_runs = 0;
    for (const Path path : kPaths) {
      SCOPED_TRACE(path_name(path));
      if (runs(path, OutputPixels::u8, ranks)) {
        const RunOutput u8 =
            run(path, pointers, ranks, shape, OutputPixels::u8, lead_values, kPoisonA);
        if (expect_output_maps_) {
          std::size_t wanted = 0;
          for (std::size_t t = 0; t < host.size(); ++t) wanted += gets_output_map(t) ? 1 : 0;
          EXPECT_EQ(u8.output_maps, wanted) << "output maps encoded";
        }
        const RunOutput u8_again =
            run(path, pointers, ranks, shape, OutputPixels::u8, lead_values, kPoisonB);
        for (std::size_t t = 0; t < host.size(); ++t) {
          SCOPED_TRACE("task " + std::to_string(t) + ", rank " + std::to_string(ranks[t]));
          EXPECT_TRUE(std::ranges::equal(u8.u8(t), u8_again.u8(t)))
              << "some u8 values were not written";
          check_u8(shape, u8.u8(t), references[t]);
        }
        u8_outputs.push_back({path, u8});
      }
      if (runs(path, OutputPixels::f32, ranks)) {
        const RunOutput f32 = run(path, pointers, ranks, shape, OutputPixels::f32,
                                  lead_values * sizeof(float), kPoisonNaN);
        for (std::size_t t = 0; t < host.size(); ++t) {
          SCOPED_TRACE("task " + std::to_string(t) + ", rank " + std::to_string(ranks[t]));
          check_f32(shape, f32.f32(t), references[t]);
        }
        ++f32_runs;
      }
    }
    // The oracle and tile64 (f32); the oracle, tile128 and tensor at least (u8).
    EXPECT_EQ(f32_runs, 2U);
    ASSERT_GE(u8_outputs.size(), 3U);
    ASSERT_EQ(u8_outputs.back().path, Path::cublas);
    const U8Output& cublas = u8_outputs.back();
    const auto fp32_order = std::ranges::find_if(
        u8_outputs, [](const U8Output& u8) { return sums_in_fp32_order(u8.path); });
    ASSERT_NE(fp32_order, u8_outputs.end());
    for (std::size_t t = 0; t < host.size(); ++t) {
      SCOPED_TRACE("task " + std::to_string(t) + ", rank " + std::to_string(ranks[t]));
      for (const U8Output& fused : u8_outputs) {
        if (fused.path == Path::cublas) continue;
        if (sums_in_fp32_order(fused.path)) {
          EXPECT_TRUE(std::ranges::equal(fp32_order->output.u8(t), fused.output.u8(t)))
              << path_name(fp32_order->path) << " and " << path_name(fused.path)
              << " u8 outputs differ";
        }
        check_paths_agree(shape, fused.output.u8(t), cublas.output.u8(t));
      }
    }
  }

  // Defined with the tests that use it, below.
  void check_blocks_that_loop(uint32_t channels, uint32_t tiles_per_block,
                              std::span<const uint32_t> rank_cycle, std::size_t lead_values,
                              uint32_t width = 384, uint32_t height = 180);
  // The wgmma kernel's launch of random factors (rank_kept, seeds seed, seed + 1, ...) with and
  // without output maps: only how the tiles leave differs, so the bytes must be the same.
  void check_maps_and_threads_agree(const ImageShape& shape, std::span<const uint32_t> ranks,
                                    uint32_t rank_kept, uint64_t seed);

  static void check_u8(const ImageShape& shape, std::span<const uint8_t> actual,
                       std::span<const double> reference) {
    std::size_t violations = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < actual.size(); ++i) {
      if (std::abs(int{actual[i]} - int{rounded_reference(reference[i])}) > kU8Tolerance) {
        if (violations++ == 0) first = i;
      }
    }
    EXPECT_EQ(violations, 0U) << "u8 values more than " << kU8Tolerance
                              << " level from the float64 reference; first at "
                              << position(shape, first) << ": " << int{actual[first]} << " vs "
                              << reference[first];
  }

  static void check_f32(const ImageShape& shape, const std::vector<float>& actual,
                        std::span<const double> reference) {
    const auto nan = std::ranges::find_if(actual, [](float v) { return std::isnan(v); });
    ASSERT_EQ(nan, actual.end()) << "f32 value not written at "
                                 << position(shape, static_cast<std::size_t>(nan - actual.begin()));
    const double distance = frobenius_distance(reference, actual);
    const double norm = frobenius_norm(reference);
    EXPECT_LE(distance, kF32RelativeTolerance * norm)
        << "relative Frobenius error " << distance / norm;
  }

  static void check_paths_agree(const ImageShape& shape, std::span<const uint8_t> fused,
                                std::span<const uint8_t> cublas) {
    std::size_t differing = 0;
    std::size_t worst = 0;
    std::size_t worst_index = 0;
    for (std::size_t i = 0; i < fused.size(); ++i) {
      const auto difference = static_cast<std::size_t>(std::abs(int{fused[i]} - int{cublas[i]}));
      if (difference != 0) ++differing;
      if (difference > worst) {
        worst = difference;
        worst_index = i;
      }
    }
    EXPECT_LE(worst, 1U) << "fused and cuBLAS u8 differ by " << worst << " at "
                         << position(shape, worst_index);
    const auto allowed = std::max<std::size_t>(
        1, static_cast<std::size_t>(kMaxPathDisagreement * static_cast<double>(fused.size())));
    EXPECT_LE(differing, allowed) << "fused and cuBLAS u8 differ in " << differing << " of "
                                  << fused.size() << " values";
  }

  std::optional<gpu::Stream> stream_;
  std::optional<gpu::CublasHandle> cublas_;
};

// ---------------------------------------------------------------------------------------------
// Shapes x channels x ranks, one image per launch

struct ShapeCase {
  std::string name;
  ImageShape shape;
  uint32_t rank = 0;
  std::size_t lead_values = 0;  // output offset, in values: 0 or an unaligned 3
};

void PrintTo(const ShapeCase& c, std::ostream* os) { *os << c.name; }

std::vector<ShapeCase> shape_cases() {
  struct Named {
    const char* name;
    uint32_t width;
    uint32_t height;
  };
  constexpr Named kShapes[] = {{"square", 256, 256}, {"wide", 300, 97}, {"tall", 97, 300},
                               {"single_pixel", 1, 1}, {"tiny", 7, 5}};
  constexpr uint32_t kChannels[] = {1, 2, 3, 4};  // 2: grey + alpha
  constexpr uint32_t kRanks[] = {1, 5, 16, 64};
  constexpr std::size_t kUnalignedLead = 3;
  std::vector<ShapeCase> cases;
  const auto add = [&cases](const char* name, ImageShape shape, uint32_t rank) {
    const std::string full = rank == shape.full_rank() ? "full" : std::to_string(rank);
    cases.push_back({std::string(name) + "_" + std::to_string(shape.width) + "x" +
                         std::to_string(shape.height) + "_c" + std::to_string(shape.channels) +
                         "_rank_" + full,
                     shape, rank, cases.size() % 2 == 0 ? 0 : kUnalignedLead});
  };
  for (const Named& named : kShapes) {
    for (const uint32_t channels : kChannels) {
      const ImageShape shape{named.width, named.height, channels};
      for (const uint32_t rank : kRanks) {
        if (rank < shape.full_rank()) add(named.name, shape, rank);
      }
      add(named.name, shape, shape.full_rank());
    }
  }
  // Rank 256 runs 32 tile128 slices per channel; 4096 wide spans 32 tile128 columns; 257 and 70
  // rows end in a partial tile for both variants.
  add("rank_256", ImageShape{4096, 260, 3}, 256);
  add("rank_256", ImageShape{300, 257, 4}, 256);
  add("hd_strip", ImageShape{1920, 70, 3}, 64);
  // Full HD at small ranks, 3 and 4 channels.
  add("hd", ImageShape{1920, 1080, 3}, 16);
  add("hd", ImageShape{1920, 1080, 4}, 3);
  // The last row tile's bottom 64 rows just outside the image (192 rows: the wgmma kernel
  // neither multiplies nor rounds them) and just inside it (193: one row there); rows of 624
  // bytes, so that the even cases (lead 0) take tensor-map stores and the odd ones (lead 3) the
  // threads' stores.
  for (const uint32_t height : {192U, 193U}) {
    const ImageShape shape{208, height, 3};
    add("bottom_half_edge", shape, 16);
    add("bottom_half_edge", shape, 40);
  }
  // An odd number of row tiles: from rank 9 the wgmma kernel pairs the last row's tiles side by
  // side (sharing US; each consumer zeroes its own V past the rank, here within the first step at
  // rank 9). 356 rows: the last row tile 100, its bottom half in the image. 400 wide: 4 tile
  // columns, the last partial (16 columns, stored by the threads); 528 wide: 5, so that the last
  // side-by-side pair has no right tile.
  for (const uint32_t width : {400U, 528U}) {
    const ImageShape shape{width, 356, 3};
    add("side_by_side", shape, 9);
    add("side_by_side", shape, 40);
  }
  // The same zeroing with 1 and 4 channels (7 and 3 stages), and a whole last column without a
  // right tile (640 wide: 5 whole columns, stored by tensor stores where the lead is 0).
  add("side_by_side", ImageShape{528, 356, 1}, 33);
  add("side_by_side", ImageShape{400, 356, 4}, 9);
  add("side_by_side", ImageShape{640, 356, 3}, 9);
  add("side_by_side", ImageShape{640, 356, 3}, 24);
  // Odd width: no row of the output starts 16-byte aligned in a regular pattern.
  for (const uint32_t channels : {1U, 3U}) {
    const ImageShape shape{333, 130, channels};
    add("odd_width", shape, 37);
    add("odd_width", shape, 9);
    add("odd_width", shape, shape.full_rank());
  }
  return cases;
}

class GpuReconstructShapeTest : public GpuReconstructTest,
                                public ::testing::WithParamInterface<ShapeCase> {};

TEST_P(GpuReconstructShapeTest, BothPathsMatchFloat64) {
  const ShapeCase& c = GetParam();
  const uint64_t seed = run_seed() ^ std::hash<std::string>{}(c.name);
  SCOPED_TRACE(seed_text(seed));
  // Keep every triplet, so rank < rank_kept exercises the leading dimensions.
  const std::vector<HostFactors> host = {random_factors(c.shape, c.shape.full_rank(), seed)};
  const uint32_t ranks[] = {c.rank};
  check_batch(c.shape, host, ranks, c.lead_values);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuReconstructShapeTest, ::testing::ValuesIn(shape_cases()),
                         [](const auto& test_info) { return test_info.param.name; });

// ---------------------------------------------------------------------------------------------
// Batches and real images

TEST_F(GpuReconstructTest, BatchOfTasksWithDifferentRanksInOneLaunch) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const ImageShape shape{150, 101, 3};
  const uint32_t ranks[] = {1, 5, 16, 64, shape.full_rank()};
  std::vector<HostFactors> host;
  for (std::size_t t = 0; t < std::size(ranks); ++t) {
    host.push_back(random_factors(shape, shape.full_rank(), seed + t));
  }
  check_batch(shape, host, ranks, 1);
}

// More tiles than two per SM at a rank where the wgmma kernel's blocks loop over tiles: each
// block's ring runs on from tile to tile, across tasks of different ranks. Images of 384 x 180
// unless named: 3 x 2 tiles of 128, the lower ones 52 rows (their bottom 64 rows outside:
// neither multiplied nor rounded).
void GpuReconstructTest::check_blocks_that_loop(uint32_t channels, uint32_t tiles_per_block,
                                                std::span<const uint32_t> rank_cycle,
                                                std::size_t lead_values, uint32_t width,
                                                uint32_t height) {
  const uint64_t seed = run_seed() ^ channels;
  SCOPED_TRACE(seed_text(seed));
  int device = 0;
  int sms = 0;
  SVDSERVE_CUDA_CHECK(cudaGetDevice(&device));
  SVDSERVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const ImageShape shape{width, height, channels};
  const uint32_t tiles_per_task = ((height + 127) / 128) * ((width + 127) / 128);
  const uint32_t rank_kept = *std::ranges::max_element(rank_cycle);
  // 2 x tiles_per_block tiles per SM or more: the wgmma kernel's one block per SM takes
  // tiles_per_block pairs of tiles or more.
  const uint32_t tasks =
      (tiles_per_block * 2 * static_cast<uint32_t>(sms) + tiles_per_task) / tiles_per_task;
  std::vector<uint32_t> ranks;
  std::vector<HostFactors> host;
  for (uint32_t t = 0; t < tasks; ++t) {
    ranks.push_back(rank_cycle[t % rank_cycle.size()]);
    host.push_back(random_factors(shape, rank_kept, seed + t));
  }
  check_batch(shape, host, ranks, lead_values);
}

TEST_F(GpuReconstructTest, BlocksThatLoopOverTilesOfMixedRanks) {
  constexpr uint32_t kRanks[] = {48, 1, 9, 40, 8, 33, 17};
  check_blocks_that_loop(3, 1, kRanks, 0);  // 3 stages, a barrier every k-step
}

TEST_F(GpuReconstructTest, BlocksThatLoopOverManyOneStepTiles) {
  // One channel, 5 stages, a barrier every other k-step: a tile at rank <= 16 is one k-step, so a
  // refill reaches up to five tiles ahead; three rounds of tiles per block.
  constexpr uint32_t kRanks[] = {40, 1, 2, 8, 1, 5, 33, 1, 8};
  check_blocks_that_loop(1, 3, kRanks, 0);
}

TEST_F(GpuReconstructTest, BlocksThatLoopOverTilesWithFourChannelsUnaligned) {
  // Four channels, 2 stages: a barrier every k-step; an unaligned output takes the generic
  // copy-out (no bulk stores) between tiles.
  constexpr uint32_t kRanks[] = {32, 8, 17, 1};
  check_blocks_that_loop(4, 2, kRanks, 3);
}

TEST_F(GpuReconstructTest, BlocksThatLoopOverTilesStoredByTensorMapsAndByThreads) {
  // Three channels, rows of 1008 bytes (whole 16-byte chunks, not whole tiles): two tasks in three
  // have an output map, so the wgmma kernel stores their two whole tile columns by tensor stores
  // (the lower row tile clipped at row 180 by the copy engine) and their last, partial column and
  // the third task's tiles by its threads. A task is 3 pairs of tiles, so on 132 SMs a block's
  // next pair is 44 tasks on: each block switches between the two stores on its staging tiles.
  output_maps_ = OutputMaps::two_in_three;
  expect_output_maps_ = true;
  constexpr uint32_t kRanks[] = {96, 16, 120, 80, 64, 1, 8, 81};
  check_blocks_that_loop(3, 2, kRanks, 0, 336);
}

TEST_F(GpuReconstructTest, BlocksThatLoopOverStackedAndSideBySidePairs) {
  // Images of 3 x 3 tiles (the last row 44 rows, the last column 80 columns): from rank 9 a task
  // is 3 stacked pairs, then 2 side-by-side pairs of its last row (the second without a right
  // tile), so that a block's consumers move between the two kinds, and between own US and own V
  // blocks to zero, across tasks of ranks 1 to 96; two tasks in three stored by tensor stores.
  output_maps_ = OutputMaps::two_in_three;
  expect_output_maps_ = true;
  constexpr uint32_t kRanks[] = {96, 1, 9, 40, 8, 33, 17, 16};
  check_blocks_that_loop(3, 2, kRanks, 0, 336, 300);
}

TEST_F(GpuReconstructTest, OutputMapsOnlyWhereTheCopyEngineCanAddressTheOutput) {
  gpu::DeviceBuffer out(8192);
  ReconstructTask task{};
  task.out = out.data();
  EXPECT_TRUE(gpu::encode_output_map(task, ImageShape{128, 4, 3}));  // rows of 384 bytes
  EXPECT_EQ(task.out_map_encoded, 1U);
  EXPECT_FALSE(gpu::encode_output_map(task, ImageShape{129, 4, 3}));  // rows of 387 bytes
  EXPECT_EQ(task.out_map_encoded, 0U);
  EXPECT_FALSE(gpu::encode_output_map(task, ImageShape{112, 4, 4}));  // no whole tile column
  EXPECT_EQ(task.out_map_encoded, 0U);
  // A partial last tile column (strides not nested: 384, then 624) and every channel count (the
  // widest box, 132 words, at 4).
  for (const ImageShape shape : {ImageShape{208, 4, 3}, ImageShape{272, 4, 1},
                                 ImageShape{272, 4, 2}, ImageShape{128, 4, 4}}) {
    EXPECT_TRUE(gpu::encode_output_map(task, shape)) << shape.width << " x " << shape.channels;
  }
  EXPECT_FALSE(gpu::encode_output_map(task, ImageShape{128, 0, 3}));  // no rows
  task.out = out.as<std::byte>() + 8;  // rows of 384 bytes from an address 8 bytes off
  EXPECT_FALSE(gpu::encode_output_map(task, ImageShape{128, 4, 3}));
  EXPECT_EQ(task.out_map_encoded, 0U);
}

void GpuReconstructTest::check_maps_and_threads_agree(const ImageShape& shape,
                                                      std::span<const uint32_t> ranks,
                                                      uint32_t rank_kept, uint64_t seed) {
  std::vector<DeviceFactors> device;
  std::vector<const DeviceFactors*> pointers;
  for (std::size_t t = 0; t < ranks.size(); ++t) {
    device.push_back(upload(random_factors(shape, rank_kept, seed + t)));
  }
  for (const DeviceFactors& d : device) pointers.push_back(&d);
  output_maps_ = OutputMaps::all;
  const RunOutput mapped =
      run(Path::fused_wgmma, pointers, ranks, shape, OutputPixels::u8, 0, kPoisonA);
  ASSERT_EQ(mapped.output_maps, ranks.size());  // else both runs store by the threads
  output_maps_ = OutputMaps::none;
  const RunOutput rows =
      run(Path::fused_wgmma, pointers, ranks, shape, OutputPixels::u8, 0, kPoisonB);
  for (std::size_t t = 0; t < ranks.size(); ++t) {
    EXPECT_TRUE(std::ranges::equal(mapped.u8(t), rows.u8(t))) << "task " << t;
  }
}

TEST_F(GpuReconstructTest, TensorMapAndThreadStoresGiveTheSameBytes) {
  if (!wgmma_runs()) GTEST_SKIP() << "the wgmma variant runs on sm_90a devices only";
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  for (const uint32_t channels : {1U, 2U, 3U, 4U}) {
    const ImageShape shape{272, 300, channels};  // rows of 272 * c bytes: all 16-byte chunks
    SCOPED_TRACE("channels " + std::to_string(channels));
    const uint32_t ranks[] = {1, 37, 130};
    ASSERT_NO_FATAL_FAILURE(check_maps_and_threads_agree(shape, ranks, shape.full_rank(), seed));
  }
}

TEST_F(GpuReconstructTest, OutputMapsAcquiredOncePerTaskGiveTheSameBytes) {
  // A task of more pairs of tiles than the launch has blocks (one per SM), so that a block takes
  // two or more pairs of one task in a row and its issuing threads acquire that task's map once
  // for them; two tasks, so that a block moves on to the other task's map.
  if (!wgmma_runs()) GTEST_SKIP() << "the wgmma variant runs on sm_90a devices only";
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  int device = 0;
  int sms = 0;
  SVDSERVE_CUDA_CHECK(cudaGetDevice(&device));
  SVDSERVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  constexpr uint32_t kColumnTiles = 13;
  const uint32_t pair_rows = (static_cast<uint32_t>(sms) + kColumnTiles) / kColumnTiles;
  const ImageShape shape{kColumnTiles * 128, pair_rows * 256, 3};
  ASSERT_GT(kColumnTiles * pair_rows, static_cast<uint32_t>(sms));
  const uint32_t ranks[] = {16, 40};
  check_maps_and_threads_agree(shape, ranks, 48, seed);
  // An odd number of row tiles: a block moves from a stacked pair of a task to a side-by-side
  // pair of the same task, on the map it acquired once.
  const ImageShape odd{shape.width, shape.height + 100, 3};
  check_maps_and_threads_agree(odd, ranks, 48, seed + std::size(ranks));
}

// The wgmma kernel multiplies in FP16 (65504 at most, normal from 2^-14): factors with US far
// past that and V far below it, the same products as random_factors' (scaled by 2^15 and 2^-15,
// exact in FP32), give the same pixels, through the operands' scale (wgmma_operand_exponent).
TEST_F(GpuReconstructTest, FactorsOutsideFp16RangeGiveTheSamePixels) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const ImageShape shape{300, 140, 3};
  constexpr float kScale = 32768.0F;
  const uint32_t ranks[] = {16, 64, shape.full_rank()};
  std::vector<HostFactors> host;
  for (std::size_t t = 0; t < std::size(ranks); ++t) {
    HostFactors f = random_factors(shape, shape.full_rank(), seed + t);
    for (float& value : f.us) value *= kScale;  // up to 7.2e6
    for (float& value : f.v) value /= kScale;   // from 3.7e-5 down
    host.push_back(std::move(f));
  }
  check_batch(shape, host, ranks, 0);
}

TEST_F(GpuReconstructTest, BatchWithRankKeptBelowFullRank) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  const ImageShape shape{333, 70, 4};
  constexpr uint32_t kRankKept = 20;
  const uint32_t ranks[] = {kRankKept, 3, 17};
  std::vector<HostFactors> host;
  for (std::size_t t = 0; t < std::size(ranks); ++t) {
    host.push_back(random_factors(shape, kRankKept, seed + t));
  }
  check_batch(shape, host, ranks, 0);
}

TEST_F(GpuReconstructTest, RealImageAtSeveralRanks) {
  const ImageF32 image = image_from_mat(read_test_image("baboon.jpg", cv::IMREAD_UNCHANGED));
  const HostFactors host = factors_from_image(image);
  const std::vector<HostFactors> hosts = {host};
  for (const uint32_t rank : {1U, 20U, image.shape.full_rank()}) {
    SCOPED_TRACE("baboon.jpg, rank " + std::to_string(rank));
    const uint32_t ranks[] = {rank};
    check_batch(image.shape, hosts, ranks, 0);
  }

  // At full rank the u8 reconstruction is the image itself (fp32 factors are ~1e-5 off).
  const DeviceFactors device = upload(host);
  const uint32_t full[] = {image.shape.full_rank()};
  for (const Path path : kPaths) {
    if (!runs(path, OutputPixels::u8, full)) continue;
    const RunOutput out =
        run(path, {&device}, full, image.shape, OutputPixels::u8, 0, kPoisonA);
    const auto pixels = out.u8(0);
    std::size_t off = 0;
    for (std::size_t i = 0; i < pixels.size(); ++i) {
      const std::size_t pixel = i / image.shape.channels;
      const auto channel = static_cast<uint32_t>(i % image.shape.channels);
      if (std::abs(int{pixels[i]} - static_cast<int>(image.plane(channel)[pixel])) > kU8Tolerance) {
        ++off;
      }
    }
    EXPECT_EQ(off, 0U) << path_name(path) << ": full-rank pixels more than " << kU8Tolerance
                       << " level from the original";
  }
}

// ---------------------------------------------------------------------------------------------
// Edges of the contract

TEST_F(GpuReconstructTest, EmptyBatchesAreNoOps) {
  const ImageShape shape{8, 8, 3};
  const uint32_t ranks[] = {1};
  EXPECT_NO_THROW(gpu::launch_fused_reconstruct(nullptr, 0, shape,
                                                launch_of(OutputPixels::u8, ranks), stream()));
  EXPECT_NO_THROW(reference::reconstruct_with_cublas(cublas_->value(), {}, shape,
                                                     OutputPixels::u8, nullptr, stream()));
}

TEST_F(GpuReconstructTest, FusedRejectsMoreThanFourChannels) {
  const ImageShape shape{8, 8, 5};
  for (const uint32_t max_rank : {1U, 256U}) {
    const uint32_t ranks[] = {max_rank};
    EXPECT_THROW(gpu::launch_fused_reconstruct(nullptr, 1, shape,
                                               launch_of(OutputPixels::u8, ranks), stream()),
                 InvalidArgument)
        << "max rank " << max_rank;
  }
}

// The policy's view of this device: sm_90a where the device is compute 9.0 (the build holds
// sm_90a code), sm_80 elsewhere.
TEST_F(GpuReconstructTest, ArchitectureOfTheDevice) {
  int device = 0;
  int major = 0;
  int minor = 0;
  SVDSERVE_CUDA_CHECK(cudaGetDevice(&device));
  SVDSERVE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  SVDSERVE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const bool sm90 = major == 9 && minor == 0;
  EXPECT_EQ(gpu::current_reconstruct_arch(),
            sm90 ? gpu::ReconstructArch::sm90a : gpu::ReconstructArch::sm80);
  EXPECT_EQ(gpu::fused_wgmma_supported(), sm90);
}

TEST_F(GpuReconstructTest, CublasRejectsRanksOutsideTheFactors) {
  const ImageShape shape{8, 8, 1};
  gpu::DeviceBuffer factors(shape.width * shape.height * sizeof(float));
  gpu::DeviceBuffer out(shape.values() * sizeof(float));
  gpu::DeviceBuffer scratch(shape.values() * sizeof(float));
  for (const uint32_t rank : {0U, 5U}) {
    const ReconstructTask task{factors.as<float>(), factors.as<float>(), rank, 4, out.data()};
    EXPECT_THROW(reference::reconstruct_with_cublas(cublas_->value(), std::span(&task, 1), shape,
                                                    OutputPixels::u8, scratch.as<float>(),
                                                    stream()),
                 InvalidArgument)
        << "rank " << rank;
  }
}

}  // namespace
}  // namespace svdserve::test
