// One server's backend over 1, 2, 4 ... GPUs of the host (MultiDeviceBackend), in process:
//   decompose:   1024² RGB images at rank 64 (the randomized SVD), images/s with 4 submitting
//                threads per device, against N x the one-GPU rate of the same run (target 0.9);
//   reconstruct: the same images' rank-64 u8 pixels into page-locked memory, against the sum of
//                each device's pinned device-to-host copy rate, and against all devices copying
//                at once (the host's own limit), both measured in the same run (target 90 % of
//                the sum);
//   capacity:    images of that kind each device's default budget holds (0.8 of free memory),
//                from the bytes one image counts in the store.
// One GPU is the plain GpuBackend, as a one-GPU server runs it; "1 (sharded)" is the same device
// behind MultiDeviceBackend, its overhead.
//
// usage: svdserve_multi_gpu_bench [--quick]

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_args.hpp"
#include "bench/bench_limits.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/gpu_backend.hpp"
#include "kernels/multi_device_backend.hpp"

namespace {

using namespace svdserve;
using Clock = std::chrono::steady_clock;

constexpr ImageShape kShape{1024, 1024, 3};
constexpr uint32_t kRank = 64;
constexpr std::size_t kBatch = 8;
constexpr unsigned kThreadsPerDevice = 4;  // one per stream, as the server's workers
constexpr std::size_t kBudget = std::size_t{16} << 30;
// What the factor store counts per image besides the factors (server/runtime/factor_store.hpp).
constexpr std::size_t kEntryBytes = 1792 + 2 * 24;

std::unique_ptr<Backend> gpu_backend(int device, std::size_t budget_bytes) {
  return gpu::make_gpu_backend({.device = device, .budget_bytes = budget_bytes});
}

// devices == 1: the plain backend; sharded: MultiDeviceBackend even over one.
std::unique_ptr<Backend> backend_over(int devices, bool sharded) {
  if (devices == 1 && !sharded) return gpu_backend(0, kBudget);
  std::vector<std::unique_ptr<Backend>> backends;
  for (int d = 0; d < devices; ++d) backends.push_back(gpu_backend(d, kBudget));
  return std::make_unique<MultiDeviceBackend>(std::move(backends));
}

std::vector<DecodedImage> random_images(std::size_t count) {
  std::vector<DecodedImage> images(count);
  std::mt19937 random(7);
  for (DecodedImage& image : images) {
    image.shape = kShape;
    image.samples.resize(kShape.values());
    // Smooth ramps plus noise: a photo-like spectrum, not flat noise.
    for (std::size_t i = 0; i < image.samples.size(); ++i) {
      const std::size_t row = i / (kShape.width * kShape.channels);
      const std::size_t col = (i / kShape.channels) % kShape.width;
      image.samples[i] =
          static_cast<std::byte>((row / 4 + col / 8 + random() % 32) % 256);
    }
  }
  return images;
}

// Runs `work(thread)` on `threads` threads for `seconds` after one warm-up call each; returns
// the calls made per second (each call counting `per_call`).
template <typename Work>
double rate(unsigned threads, double seconds, std::size_t per_call, Work&& work) {
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> calls{0};
  std::barrier start(static_cast<std::ptrdiff_t>(threads) + 1);
  std::vector<std::jthread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      work(t);  // warm-up
      start.arrive_and_wait();
      while (!stop.load()) {
        work(t);
        ++calls;
      }
    });
  }
  start.arrive_and_wait();
  const auto began = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  const std::size_t done_at_stop = calls.load();
  const double elapsed = std::chrono::duration<double>(Clock::now() - began).count();
  workers.clear();
  return static_cast<double>(done_at_stop * per_call) / elapsed;
}

// Each device's pinned device-to-host rate alone (GB/s).
std::vector<double> d2h_alone(int devices) {
  std::vector<double> alone;
  for (int d = 0; d < devices; ++d) {
    SVDSERVE_CUDA_CHECK(cudaSetDevice(d));
    alone.push_back(bench::pinned_d2h_gb_per_s());
  }
  return alone;
}

// Devices 0..devices-1 copying to pinned host memory at once, summed (GB/s): the host's share.
double d2h_together(int devices) {
  constexpr std::size_t kBytes = std::size_t{256} << 20;
  constexpr int kRepeats = 8;
  // Timed between two barriers: allocation before the first, freeing after the second.
  std::barrier start(devices + 1);
  std::barrier done(devices + 1);
  std::vector<std::jthread> copiers;
  for (int d = 0; d < devices; ++d) {
    copiers.emplace_back([&, d] {
      SVDSERVE_CUDA_CHECK(cudaSetDevice(d));
      gpu::DeviceBuffer source(kBytes);
      gpu::PinnedBuffer target(kBytes);
      gpu::Stream stream;
      SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(target.data(), source.data(), kBytes,
                                          cudaMemcpyDeviceToHost, stream.view().value()));
      SVDSERVE_CUDA_CHECK(cudaStreamSynchronize(stream.view().value()));  // warm-up
      start.arrive_and_wait();
      for (int r = 0; r < kRepeats; ++r) {
        SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(target.data(), source.data(), kBytes,
                                            cudaMemcpyDeviceToHost, stream.view().value()));
      }
      SVDSERVE_CUDA_CHECK(cudaStreamSynchronize(stream.view().value()));
      done.arrive_and_wait();
    });
  }
  start.arrive_and_wait();
  const auto began = Clock::now();
  done.arrive_and_wait();
  const double elapsed = std::chrono::duration<double>(Clock::now() - began).count();
  copiers.clear();
  return static_cast<double>(devices) * kRepeats * kBytes / elapsed / 1e9;
}

double decompose_rate(Backend& backend, int devices, const std::vector<DecodedImage>& images,
                      double seconds) {
  return rate(kThreadsPerDevice * static_cast<unsigned>(devices), seconds, kBatch,
              [&](unsigned thread) {
                std::vector<const DecodedImage*> batch;
                for (std::size_t i = 0; i < kBatch; ++i) {
                  batch.push_back(&images[(thread * kBatch + i) % images.size()]);
                }
                (void)backend.decompose(batch, kRank);  // the factors go at once
              });
}

// Reconstructions of resident factors into page-locked outputs, batches of one device.
double reconstruct_rate(Backend& backend, int devices, const std::vector<DecodedImage>& images,
                        double seconds) {
  const unsigned threads = kThreadsPerDevice * static_cast<unsigned>(devices);
  std::vector<std::vector<std::shared_ptr<const Factors>>> by_device(devices);
  for (std::size_t i = 0; by_device.back().size() < kBatch && i < 64 * kBatch; ++i) {
    const DecodedImage* image = &images[i % images.size()];
    auto factors = backend.decompose(std::span<const DecodedImage* const>(&image, 1), kRank);
    auto& list = by_device.at(factors.front()->device());
    if (list.size() < kBatch) list.push_back(std::move(factors.front()));
  }
  std::vector<std::vector<HostMemory>> outputs(threads);
  for (auto& thread_outputs : outputs) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      thread_outputs.push_back(backend.allocate_output_memory(kShape.values()));
    }
  }
  return rate(threads, seconds, kBatch, [&](unsigned thread) {
    const auto& factors = by_device[thread % devices];
    std::vector<ReconstructItem> items;
    for (std::size_t i = 0; i < factors.size(); ++i) {
      items.push_back({factors[i].get(), kRank, OutputPixels::u8,
                       std::span<std::byte>(outputs[thread][i].get(), kShape.values())});
    }
    backend.reconstruct(items);
  });
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = bench::parse_bench_args(argc, argv);
  if (!args) return 1;
  const int visible = gpu::cuda_device_count();
  const double seconds = args->quick ? 2.0 : 5.0;
  std::vector<int> counts{1};
  for (int n = 2; n <= visible; n *= 2) counts.push_back(n);
  if (counts.back() != visible) counts.push_back(visible);
  const std::vector<DecodedImage> images = random_images(32);
  const double output_gb = static_cast<double>(kShape.values()) / 1e9;

  std::printf("%d GPUs; %ux%ux%u images, rank %u, batches of %zu, %u threads per device, %.0f s "
              "per run\n\n",
              visible, kShape.width, kShape.height, kShape.channels, kRank, kBatch,
              kThreadsPerDevice, seconds);

  // Capacity first, while the devices are empty: the default budget is 0.8 of free memory.
  {
    std::size_t image_bytes = 0;
    std::printf("capacity: 1024² RGB rank-64 images the default budgets hold\n");
    std::printf("%8s %16s %14s %10s\n", "GPUs", "budget GiB", "images", "x 1 GPU");
    std::vector<std::size_t> budgets;
    for (int d = 0; d < visible; ++d) {
      auto one = gpu_backend(d, 0);
      budgets.push_back(one->default_memory_budget_bytes());
      if (image_bytes == 0) {
        const DecodedImage* image = &images.front();
        image_bytes = one->decompose(std::span<const DecodedImage* const>(&image, 1), kRank)
                          .front()
                          ->bytes_resident() +
                      kEntryBytes;
      }
    }
    const std::size_t one_gpu = budgets.front() / image_bytes;
    for (int n : counts) {
      std::size_t held = 0, budget = 0;
      for (int d = 0; d < n; ++d) {
        held += budgets[d] / image_bytes;
        budget += budgets[d];
      }
      std::printf("%8d %16.1f %14zu %10.2f\n", n, budget / double(1 << 30), held,
                  static_cast<double>(held) / one_gpu);
    }
    std::printf("(%zu bytes per image: factors with their wgmma operands, and the entry)\n\n",
                image_bytes);
  }

  const std::vector<double> alone = d2h_alone(visible);
  std::vector<double> together(visible + 1, 0.0);
  std::printf("pinned D2H GB/s, each device alone:");
  for (double gb : alone) std::printf(" %.1f", gb);
  std::printf("; devices 0..N-1 at once:");
  for (int n : counts) {
    together[n] = d2h_together(n);
    std::printf(" N=%d %.1f", n, together[n]);
  }
  std::printf("\n\n");

  std::printf("%-14s %14s %10s %16s %10s %12s %12s\n", "GPUs", "decompose/s", "x N*one",
              "reconstruct/s", "GB/s", "% sum D2H", "% together");
  double one_decompose = 0;
  for (int n : counts) {
    for (bool sharded : {false, true}) {
      if (n > 1 && !sharded) continue;
      auto backend = backend_over(n, sharded);
      const double decompose = decompose_rate(*backend, n, images, seconds);
      const double reconstruct = reconstruct_rate(*backend, n, images, seconds);
      if (n == 1 && !sharded) one_decompose = decompose;
      double sum_limit = 0;
      for (int d = 0; d < n; ++d) sum_limit += alone[d];
      const double gb = reconstruct * output_gb;
      const std::string label = std::to_string(n) + (n == 1 && sharded ? " (sharded)" : "");
      std::printf("%-14s %14.1f %10.3f %16.1f %10.1f %11.1f%% %11.1f%%\n", label.c_str(),
                  decompose, decompose / (n * one_decompose), reconstruct, gb,
                  100 * gb / sum_limit, 100 * gb / together[n]);
    }
  }
  std::printf("\ntargets: decompose >= 0.9 x N x one GPU; reconstruct >= 90 %% of the summed "
              "D2H limit\n");
  return 0;
}
