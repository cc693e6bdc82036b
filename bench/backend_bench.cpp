// Backend throughput, measured in one run next to the limits that bound it:
//   - decompose: images/s for batches of same-sized images, GPU backend (gesvda batched with
//     the residual check, and Xgesvd per image) against the CPU backend (LAPACK sgesdd, all cores);
//     and gesvda without the wgmma operands (decompose_batch directly): on an sm_90a device the
//     difference to the first row is what writing them costs;
//   - reconstruct: images/s of u8 reconstructions from resident factors at several ranks, the
//     backend (the policy's kernel) and the cuBLAS oracle (tests/support) with the same copies to
//     the host, against the PCIe limit (measured pinned D2H bandwidth / output bytes per image),
//     since every output crosses PCIe once.
// Every timed call is synchronous (it waits for its stream), so wall time after warm-up is the
// right clock for them; the PCIe limit is timed with CUDA events.
//
// usage: svdserve_backend_bench [--quick] [--json FILE]

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/common/device_memory_pool.hpp"
#include "kernels/gpu/common/stream_pool.hpp"
#include "kernels/gpu/gpu_backend.hpp"
#include "kernels/gpu/gpu_decompose.hpp"
#include "kernels/gpu/gpu_factors.hpp"
#include "kernels/gpu/reconstruct/fused.hpp"
#include "bench/bench_args.hpp"
#include "bench/bench_limits.hpp"
#include "tests/support/cublas_reference.hpp"

namespace {

using namespace svdserve;
using Clock = std::chrono::steady_clock;

// Image-like content: a few smooth rank-1 layers plus noise, so the spectrum decays as a
// photo's does (pure noise would be a worst case no real image shows).
ImageF32 synthetic_image(uint32_t size, uint32_t channels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 6.0f);
  std::uniform_real_distribution<float> phase(0.0f, 6.28f);
  ImageF32 image;
  image.shape = {size, size, channels};
  image.planes.resize(image.shape.values());
  for (uint32_t c = 0; c < channels; ++c) {
    float a[6], b[6];
    for (int l = 0; l < 6; ++l) { a[l] = phase(rng); b[l] = phase(rng); }
    auto plane = image.plane(c);
    for (uint32_t i = 0; i < size; ++i) {
      for (uint32_t j = 0; j < size; ++j) {
        float v = 128.0f;
        for (int l = 0; l < 6; ++l) {
          v += 60.0f / (l + 1) * std::sin(a[l] + (l + 1) * 3.0f * i / size) *
               std::cos(b[l] + (l + 1) * 2.0f * j / size);
        }
        plane[std::size_t{i} * size + j] = std::clamp(v + noise(rng), 0.0f, 255.0f);
      }
    }
  }
  return image;
}

template <typename F>
double seconds_per_call(F&& call, int repeats) {
  call();  // warm-up: workspaces, handles, module load
  const auto start = Clock::now();
  for (int r = 0; r < repeats; ++r) call();
  return std::chrono::duration<double>(Clock::now() - start).count() / repeats;
}

// gesvda batched on one stream, as the backend runs it, but without the wgmma operands.
class DecomposeWithoutOperands {
 public:
  void operator()(std::span<const ImageF32* const> images, uint32_t rank) {
    std::vector<DecodedImage> decoded;
    for (const ImageF32* image : images) decoded.push_back(to_decoded(*image));
    std::vector<const DecodedImage*> pointers;
    for (const DecodedImage& image : decoded) pointers.push_back(&image);
    (void)gpu::decompose_batch(context_, pointers, rank, gpu::SvdMethod::gesvda_batched, pool_,
                               false, gpu::JpegDecoding{});
  }

 private:
  static constexpr std::size_t kPoolBytes = std::size_t{1} << 30;
  gpu::StreamContext context_{0, 0};
  gpu::DeviceMemoryPool pool_{0, kPoolBytes};
};

// The cuBLAS oracle on resident factors: `batch` reconstructions into device memory, then each
// copied to its host output, as the backend's batch is.
class CublasReconstruction {
 public:
  CublasReconstruction(const gpu::GpuFactors& factors, std::size_t batch)
      : factors_(factors),
        scratch_(factors.shape().values() * sizeof(float)),
        out_(factors.shape().values() * batch),
        cublas_(stream_.view()) {}

  void operator()(uint32_t rank, std::span<std::vector<std::byte>> outputs) {
    const std::size_t bytes = factors_.shape().values();
    std::vector<gpu::ReconstructTask> tasks;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      tasks.push_back({factors_.us(), factors_.v(), rank, factors_.rank_kept(),
                       out_.as<std::byte>() + i * bytes});
    }
    const gpu::StreamView stream = stream_.view();
    reference::reconstruct_with_cublas(cublas_.value(), tasks, factors_.shape(), OutputPixels::u8,
                                       scratch_.as<float>(), stream);
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(outputs[i].data(), out_.as<std::byte>() + i * bytes,
                                          bytes, cudaMemcpyDeviceToHost, stream.value()));
    }
    stream.synchronize();
  }

 private:
  const gpu::GpuFactors& factors_;
  gpu::Stream stream_;
  gpu::DeviceBuffer scratch_;
  gpu::DeviceBuffer out_;
  gpu::CublasHandle cublas_;
};

struct Row {
  std::string what;
  uint32_t size, channels, batch, rank;
  double images_per_s;
  double limit_images_per_s;  // 0: none
};

}  // namespace

int main(int argc, char** argv) {
  const std::optional<bench::BenchArgs> args = bench::parse_bench_args(argc, argv);
  if (!args) return 1;
  const bool quick = args->quick;
  const std::string& json_path = args->json_path;
  std::vector<Row> rows;
  const double d2h = bench::pinned_d2h_gb_per_s();
  std::printf("pinned D2H bandwidth: %.1f GB/s\n", d2h);

  gpu::GpuBackendOptions gesvda_options;
  gesvda_options.streams = 1;
  gesvda_options.svd_method = gpu::SvdMethod::gesvda_batched;
  gpu::GpuBackendOptions gesvd_options = gesvda_options;
  gesvd_options.svd_method = gpu::SvdMethod::gesvd;
  auto gesvda = gpu::make_gpu_backend(gesvda_options);
  auto gesvd = gpu::make_gpu_backend(gesvd_options);
  auto cpu = make_cpu_backend({.threads = 0});
  DecomposeWithoutOperands gesvda_without_operands;
  std::printf("device: %s\ncpu: %s\n", gesvda->device_description().c_str(),
              cpu->device_description().c_str());

  // Decompose: batches of grey images, max rank 64.
  for (uint32_t size : {256u, 1024u}) {
    const uint32_t batch = size == 256 ? (quick ? 32u : 128u) : (quick ? 4u : 16u);
    std::vector<ImageF32> images;
    for (uint32_t i = 0; i < batch; ++i) images.push_back(synthetic_image(size, 1, i));
    std::vector<const ImageF32*> pointers;
    for (const auto& image : images) pointers.push_back(&image);
    const uint32_t rank = 64;
    const auto on = [rank](Backend* backend) {
      return std::function<void(std::span<const ImageF32* const>)>(
          [backend, rank](std::span<const ImageF32* const> subset_of_images) {
            (void)backend->decompose(subset_of_images, rank);
          });
    };
    const std::function<void(std::span<const ImageF32* const>)> without_operands =
        [&gesvda_without_operands, rank](std::span<const ImageF32* const> subset_of_images) {
          gesvda_without_operands(subset_of_images, rank);
        };
    for (const auto& [name, decompose] :
         {std::pair{"decompose gpu gesvda", on(gesvda.get())},
          std::pair{"decompose gpu gesvda, no operands", without_operands},
          std::pair{"decompose gpu gesvd", on(gesvd.get())},
          std::pair{"decompose cpu sgesdd", on(cpu.get())}}) {
      const bool slow = std::string(name) == "decompose gpu gesvd" ||
                        std::string(name).find("cpu") != std::string::npos;
      std::vector<const ImageF32*> subset = pointers;
      if (slow && size == 1024) subset.resize(std::min<std::size_t>(subset.size(), 2));
      const double s = seconds_per_call([&] { decompose(subset); }, quick ? 1 : 3);
      rows.push_back({name, size, 1, static_cast<uint32_t>(subset.size()), rank,
                       subset.size() / s, 0.0});
    }
    const BackendMetrics m = gesvda->metrics();
    std::printf("gesvda after %u^2: %llu matrices solved, %llu redone with gesvd (residual check);"
                " identity error from %.3g to %.3g\n",
                size, static_cast<unsigned long long>(m.svd_matrices),
                static_cast<unsigned long long>(m.svd_matrices_redone),
                m.svd_identity_error_range[0], m.svd_identity_error_range[1]);
  }

  // Reconstruct 1024x1024x3 from resident factors, u8 out.
  {
    const uint32_t size = 1024, channels = 3, batch = quick ? 8 : 32;
    const ImageF32 image = synthetic_image(size, channels, 7);
    const ImageF32* pointer = &image;
    auto factors = gesvda->decompose(std::span(&pointer, 1), 256);
    const std::size_t bytes = std::size_t{size} * size * channels;
    std::vector<std::vector<std::byte>> outputs(batch, std::vector<std::byte>(bytes));
    const double pcie_limit = d2h * 1e9 / bytes;
    CublasReconstruction cublas(dynamic_cast<const gpu::GpuFactors&>(*factors[0]), batch);
    for (uint32_t rank : {16u, 64u, 256u}) {
      std::vector<ReconstructItem> items;
      for (auto& out : outputs) items.push_back({factors[0].get(), rank, OutputPixels::u8, out});
      const double fused_s = seconds_per_call([&] { gesvda->reconstruct(items); }, quick ? 3 : 10);
      rows.push_back({"reconstruct gpu fused", size, channels, batch, rank, batch / fused_s,
                      pcie_limit});
      const double cublas_s = seconds_per_call([&] { cublas(rank, outputs); }, quick ? 3 : 10);
      rows.push_back({"reconstruct gpu cublas", size, channels, batch, rank, batch / cublas_s,
                      pcie_limit});
    }
  }

  std::printf("\n%-34s %6s %3s %6s %5s %12s %12s %7s\n", "what", "size", "ch", "batch", "rank",
              "images/s", "limit/s", "ratio");
  for (const Row& r : rows) {
    std::printf("%-34s %6u %3u %6u %5u %12.1f %12s %7s\n", r.what.c_str(), r.size, r.channels,
                r.batch, r.rank, r.images_per_s,
                r.limit_images_per_s > 0 ? std::to_string(r.limit_images_per_s).substr(0, 9).c_str() : "-",
                r.limit_images_per_s > 0
                    ? std::to_string(r.images_per_s / r.limit_images_per_s).substr(0, 5).c_str()
                    : "-");
  }
  if (!json_path.empty()) {
    std::ofstream json(json_path);
    json << "{\"pinned_d2h_gb_per_s\": " << d2h << ", \"rows\": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      json << (i ? "," : "") << "\n {\"what\": \"" << r.what << "\", \"size\": " << r.size
           << ", \"channels\": " << r.channels << ", \"batch\": " << r.batch
           << ", \"rank\": " << r.rank << ", \"images_per_s\": " << r.images_per_s
           << ", \"limit_images_per_s\": " << r.limit_images_per_s << "}";
    }
    json << "\n]}\n";
  }
  return 0;
}
