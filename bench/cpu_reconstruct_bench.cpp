// CPU reconstruction throughput from resident factors, no gRPC: images/s of the CPU backend (all
// its workers, one batch) and of one worker alone, for u8 and f32 output, next to one bare
// single-threaded cblas_sgemm per channel into planar floats (no scaling, rounding or
// interleaving): the GEMM alone, which the fused kernel should match or beat.
// Factors are random (the kernel's speed does not depend on their values).
//
// usage: svdserve_cpu_reconstruct_bench [--size N] [--channels C] [--rank K] [--batch B]
//                                       [--threads T] [--seconds S]

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/factors.hpp"
#include "kernels/cpu/reconstruct.hpp"

namespace {

using namespace svdserve;
using Clock = std::chrono::steady_clock;

struct Options {
  uint32_t size = 1024;
  uint32_t channels = 3;
  uint32_t rank = 32;
  std::size_t batch = 8;
  unsigned threads = 0;  // 0: one per hardware thread, as the server
  double seconds = 2.0;
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--size") options.size = static_cast<uint32_t>(std::atoi(value));
    else if (flag == "--channels") options.channels = static_cast<uint32_t>(std::atoi(value));
    else if (flag == "--rank") options.rank = static_cast<uint32_t>(std::atoi(value));
    else if (flag == "--batch") options.batch = static_cast<std::size_t>(std::atoi(value));
    else if (flag == "--threads") options.threads = static_cast<unsigned>(std::atoi(value));
    else if (flag == "--seconds") options.seconds = std::atof(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      std::exit(2);
    }
  }
  return options;
}

std::shared_ptr<const CpuFactors> random_factors(const Options& options, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  const ImageShape shape{options.size, options.size, options.channels};
  std::vector<std::vector<float>> singular_values(options.channels);
  std::vector<CpuChannelFactors> channels(options.channels);
  for (uint32_t c = 0; c < options.channels; ++c) {
    for (uint32_t i = 0; i < options.rank; ++i) {
      singular_values[c].push_back(4000.0F / static_cast<float>(i + 1));
    }
    channels[c].u.resize(std::size_t{options.size} * options.rank);
    channels[c].vt.resize(std::size_t{options.rank} * options.size);
    const float scale = 1.0F / std::sqrt(static_cast<float>(options.size));
    for (float& value : channels[c].u) value = normal(rng) * scale;
    for (float& value : channels[c].vt) value = normal(rng) * scale;
  }
  return std::make_shared<const CpuFactors>(shape, options.rank, std::move(singular_values),
                                            std::move(channels), 1.0);
}

// Repeats `call` (one warm-up first) for about `seconds`; returns the fastest call's rate, since
// other processes on a shared host only ever slow a call down.
template <class F>
double calls_per_second(F&& call, double seconds) {
  call();
  double fastest = std::numeric_limits<double>::infinity();
  const auto start = Clock::now();
  do {
    const auto call_start = Clock::now();
    call();
    fastest = std::min(fastest, std::chrono::duration<double>(Clock::now() - call_start).count());
  } while (std::chrono::duration<double>(Clock::now() - start).count() < seconds);
  return 1.0 / fastest;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  const ImageShape shape{options.size, options.size, options.channels};
  std::vector<std::shared_ptr<const CpuFactors>> factors;
  for (std::size_t i = 0; i < options.batch; ++i) factors.push_back(random_factors(options, i));

  std::printf("%ux%u x%u rank %u, batch %zu\n", options.size, options.size, options.channels,
              options.rank, options.batch);
  const auto backend = make_cpu_backend({.threads = options.threads});
  std::printf("%s\n", backend->device_description().c_str());

  for (const OutputPixels pixels : {OutputPixels::u8, OutputPixels::f32}) {
    const std::size_t image_bytes = shape.values() * bytes_per_value(pixels);
    std::vector<std::vector<std::byte>> outputs(options.batch, std::vector<std::byte>(image_bytes));
    std::vector<ReconstructItem> items;
    for (std::size_t i = 0; i < options.batch; ++i) {
      items.push_back({factors[i].get(), options.rank, pixels, outputs[i]});
    }
    const char* name = pixels == OutputPixels::u8 ? "u8" : "f32";

    const double all_workers =
        options.batch * calls_per_second([&] { backend->reconstruct(items); }, options.seconds);
    ReconstructWorkspace workspace;
    const double one_worker = calls_per_second(
        [&] {
          reconstruct_band(*factors[0], options.rank, pixels, outputs[0],
                           RowBand{0, options.size}, workspace);
        },
        options.seconds);
    std::vector<float> planes(shape.values());
    const int n = static_cast<int>(options.size);
    const int k = static_cast<int>(options.rank);
    const double bare_sgemm = calls_per_second(
        [&] {
          for (uint32_t c = 0; c < options.channels; ++c) {
            const CpuChannelFactors& f = factors[0]->channel(c);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, k, 1.0F, f.u.data(), k,
                        f.vt.data(), n, 0.0F, planes.data() + std::size_t{c} * n * n, n);
          }
        },
        options.seconds);
    std::printf("%-4s all workers %8.1f images/s | one worker %7.1f images/s = %.2fx a bare "
                "one-thread sgemm (%.1f images/s)\n",
                name, all_workers, one_worker, one_worker / bare_sgemm, bare_sgemm);
  }
  return 0;
}
