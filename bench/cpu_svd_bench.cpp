// The CPU backend's decompose on real photos resized to a square: images/s of the backend with
// cpu_svd exact (sgesdd) and automatic (randomized) next to numpy.linalg.svd's work per channel
// (float64 dgesdd, full U and V, BLAS on every core), and the randomized solver's worst rank-k
// error against the optimum (float64 dgesdd singular values) over every k <= the rank kept.
//   --sweep      the error and time per plane for other oversampling / power-iteration choices
//   --crossover  time per plane of both solvers as the rank grows (the automatic policy's limit)
//   --cost       nominal GFlop/s per plane (svd_flops.hpp) of the automatic policy at several
//                shapes and ranks: the evidence for kCpuSvdFlopsPerSecond (cpu/svd_cost.hpp)
//
// usage: svdserve_cpu_svd_bench [--images DIR] [--size N] [--rank K] [--photos N] [--sweep]
//                               [--crossover] [--cost]

#include <cblas.h>
#include <lapacke.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_images.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/blas_kernels.hpp"
#include "kernels/cpu/exact_svd.hpp"
#include "kernels/cpu/randomized_svd.hpp"
#include "kernels/cpu/svd.hpp"
#include "kernels/cpu/svd_cost.hpp"

namespace {

using namespace svdserve;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string images;
  uint32_t size = 1024;
  uint32_t rank = 64;
  std::size_t photos = 4;
  bool sweep = false;
  bool crossover = false;
  bool cost = false;
};

[[nodiscard]] double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Every readable photo of the folder as three size x size planes (grey photos repeat).
std::vector<ImageF32> load_photos(const std::string& folder, uint32_t size, std::size_t most) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) paths.push_back(entry);
  std::ranges::sort(paths);
  std::vector<ImageF32> photos;
  for (const auto& path : paths) {
    if (photos.size() == most) break;
    cv::Mat mat = cv::imread(path.string(), cv::IMREAD_COLOR);
    if (mat.empty()) continue;
    cv::resize(mat, mat, cv::Size(static_cast<int>(size), static_cast<int>(size)), 0, 0,
               cv::INTER_CUBIC);
    ImageF32 image;
    image.shape = {size, size, 3};
    image.planes.resize(image.shape.values());
    for (uint32_t c = 0; c < 3; ++c) {
      auto plane = image.plane(c);
      for (uint32_t y = 0; y < size; ++y) {
        for (uint32_t x = 0; x < size; ++x) {
          plane[std::size_t{y} * size + x] = mat.at<cv::Vec3b>(static_cast<int>(y),
                                                               static_cast<int>(x))[c];
        }
      }
    }
    photos.push_back(std::move(image));
  }
  return photos;
}

// ||A - A_k||_F of the optimum for k = 1..rank, from float64 singular values.
std::vector<double> optimal_errors(std::span<const float> plane, uint32_t size, uint32_t rank) {
  std::vector<double> a(plane.begin(), plane.end());
  std::vector<double> values(size);
  if (LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', static_cast<int>(size), static_cast<int>(size),
                     a.data(), static_cast<int>(size), values.data(), nullptr, 1, nullptr,
                     1) != 0) {
    throw std::runtime_error("dgesdd failed");
  }
  std::vector<double> errors(rank + 1);
  for (uint32_t k = 0; k <= rank; ++k) {
    double tail = 0.0;
    for (uint32_t i = k; i < size; ++i) tail += values[i] * values[i];
    errors[k] = std::sqrt(tail);
  }
  return errors;
}

// max over k of ||A - U_k S_k Vt_k||_F / optimum, the residual kept in float64.
double worst_ratio(std::span<const float> plane, uint32_t size, const PlaneSvd& svd,
                   uint32_t rank, const std::vector<double>& optimum) {
  std::vector<double> residual(plane.begin(), plane.end());
  double worst = 0.0;
  for (uint32_t k = 0; k < rank; ++k) {
    const double s = svd.singular_values[k];
    double norm = 0.0;
    for (uint32_t y = 0; y < size; ++y) {
      const double us = s * svd.factors.u[std::size_t{y} * rank + k];
      double* row = residual.data() + std::size_t{y} * size;
      const float* v = svd.factors.vt.data() + std::size_t{k} * size;
      for (uint32_t x = 0; x < size; ++x) {
        row[x] -= us * v[x];
        norm += row[x] * row[x];
      }
    }
    worst = std::max(worst, std::sqrt(norm) / optimum[k + 1]);
  }
  return worst;
}

struct Planes {
  std::vector<std::span<const float>> planes;
  std::vector<std::vector<double>> optimum;
};

void report_randomized(const Planes& planes, uint32_t size, uint32_t rank,
                       const RandomizedSvdOptions& options) {
  RandomizedSvdWorkspace workspace;
  double worst = 0.0;
  double seconds = 0.0;
  for (std::size_t i = 0; i < planes.planes.size(); ++i) {
    (void)randomized_svd(planes.planes[i], size, size, rank, options, workspace);  // warm
    const auto start = Clock::now();
    const PlaneSvd svd = randomized_svd(planes.planes[i], size, size, rank, options, workspace);
    seconds += seconds_since(start);
    worst = std::max(worst, worst_ratio(planes.planes[i], size, svd, rank, planes.optimum[i]));
  }
  std::printf("  p%-3d q%d l%-4u  worst rank-k error / optimum %.6f   %.1f ms/plane\n",
              options.oversampling, options.power_iterations,
              sketch_columns(size, size, rank, options), worst,
              1e3 * seconds / static_cast<double>(planes.planes.size()));
}

// What numpy.linalg.svd does per channel: float64 dgesdd with full U and V (jobz 'A'), BLAS on
// every core, one plane after another.
double numpy_like_images_per_second(const std::vector<ImageF32>& photos) {
  openblas_set_num_threads(static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
  const uint32_t size = photos.front().shape.width;
  const auto n = static_cast<int>(size);
  std::vector<double> a(std::size_t{size} * size), u(a.size()), vt(a.size()), s(size);
  const auto start = Clock::now();
  for (const auto& photo : photos) {
    for (uint32_t c = 0; c < 3; ++c) {
      std::ranges::copy(photo.plane(c), a.begin());
      if (LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'A', n, n, a.data(), n, s.data(), u.data(), n,
                         vt.data(), n) != 0) {
        throw std::runtime_error("dgesdd failed");
      }
    }
  }
  const double rate = static_cast<double>(photos.size()) / seconds_since(start);
  openblas_set_num_threads(1);
  return rate;
}

double images_per_second(Backend& backend, const std::vector<ImageF32>& photos, uint32_t rank) {
  std::vector<const ImageF32*> batch;
  for (const auto& photo : photos) batch.push_back(&photo);
  (void)backend.decompose(batch, rank);  // warm-up: workspaces grow
  int rounds = 0;
  const auto start = Clock::now();
  do {
    (void)backend.decompose(batch, rank);
    ++rounds;
  } while (seconds_since(start) < 3.0);
  return static_cast<double>(rounds * photos.size()) / seconds_since(start);
}

void crossover(const Planes& planes, uint32_t size) {
  std::printf("time per plane, one thread, %ux%u:\n", size, size);
  ExactSvdWorkspace exact_workspace;
  RandomizedSvdWorkspace workspace;
  const auto plane = planes.planes.front();
  (void)exact_svd(plane, size, size, 1, exact_workspace);
  auto start = Clock::now();
  (void)exact_svd(plane, size, size, 1, exact_workspace);
  const double exact_seconds = seconds_since(start);
  std::printf("  exact sgesdd %.1f ms\n", 1e3 * exact_seconds);
  const RandomizedSvdOptions options;
  for (uint32_t rank = 32; rank <= size; rank *= 2) {
    const uint32_t sketch = sketch_columns(size, size, rank, options);
    (void)randomized_svd(plane, size, size, std::min(rank, sketch), options, workspace);
    start = Clock::now();
    (void)randomized_svd(plane, size, size, std::min(rank, sketch), options, workspace);
    const double seconds = seconds_since(start);
    std::printf("  rank %4u l %4u (%.2f of min(h,w)): randomized %.1f ms, %.2fx exact\n", rank,
                sketch, static_cast<double>(sketch) / size, 1e3 * seconds,
                seconds / exact_seconds);
  }
}

// One thread, the first photo's first plane resized to each shape: the automatic policy's time
// per plane against its nominal flops.
void cost(const ImageF32& photo) {
  const uint32_t size = photo.shape.width;
  const cv::Mat plane(static_cast<int>(size), static_cast<int>(size), CV_32F,
                      const_cast<float*>(photo.plane(0).data()));
  std::printf("nominal GFlop/s per plane, one thread (kCpuSvdFlopsPerSecond: %.0f):\n",
              kCpuSvdFlopsPerSecond / 1e9);
  openblas_set_num_threads(1);  // as the backend runs it
  SvdWorkspace workspace;
  const uint32_t shapes[][2] = {{1024, 1024}, {2048, 2048}, {512, 2048}, {2048, 512}};
  for (const auto& [height, width] : shapes) {
    cv::Mat resized;
    cv::resize(plane, resized, cv::Size(static_cast<int>(width), static_cast<int>(height)), 0, 0,
               cv::INTER_CUBIC);
    const std::span<const float> values(resized.ptr<float>(), std::size_t{height} * width);
    const uint32_t full_rank = std::min(height, width);
    for (const uint32_t rank : {64U, 256U, full_rank}) {
      const CpuSvdMethod method = CpuSvdMethod::automatic;
      (void)truncated_svd(values, height, width, rank, method, workspace);  // warm
      const auto start = Clock::now();
      (void)truncated_svd(values, height, width, rank, method, workspace);
      const double seconds = seconds_since(start);
      const double flops = truncated_svd_flops(method, height, width, rank);
      std::printf("  %4ux%-4u rank %4u %-10s %8.1f ms  %5.1f GFlop/s\n", height, width, rank,
                  choose_svd_engine(method, height, width, rank) == CpuSvdEngine::exact
                      ? "exact"
                      : "randomized",
                  1e3 * seconds, flops / seconds / 1e9);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--images" && has_value) args.images = argv[++i];
    else if (arg == "--size" && has_value) args.size = static_cast<uint32_t>(std::stoul(argv[++i]));
    else if (arg == "--rank" && has_value) args.rank = static_cast<uint32_t>(std::stoul(argv[++i]));
    else if (arg == "--photos" && has_value) args.photos = std::stoul(argv[++i]);
    else if (arg == "--sweep") args.sweep = true;
    else if (arg == "--crossover") args.crossover = true;
    else if (arg == "--cost") args.cost = true;
  }
  const auto folder = bench::images_folder(argv[0], args.images);
  if (!folder) return bench::kUsageExitCode;
  // The kernels the server would use, for every measurement below.
  const std::string kernel_choice = cpu_blas::use_best_kernels();
  if (!kernel_choice.empty()) std::printf("%s\n", kernel_choice.c_str());
  const std::vector<ImageF32> photos = load_photos(*folder, args.size, args.photos);
  if (photos.empty()) return bench::kUsageExitCode;
  std::printf("%zu photos at %ux%u RGB, rank %u, %u hardware threads\n", photos.size(), args.size,
              args.size, args.rank, std::thread::hardware_concurrency());

  if (args.cost) {
    cost(photos.front());
    return 0;
  }

  Planes planes;
  for (const auto& photo : photos) {
    for (uint32_t c = 0; c < 3; ++c) {
      planes.planes.push_back(photo.plane(c));
      planes.optimum.push_back(optimal_errors(planes.planes.back(), args.size, args.rank));
    }
  }

  if (args.crossover) crossover(planes, args.size);
  if (args.sweep) {
    std::printf("randomized SVD, rank %u, every plane:\n", args.rank);
    for (const int power_iterations : {1, 2, 3, 4}) {
      for (const int oversampling : {16, 32, 64}) {
        RandomizedSvdOptions options;
        options.oversampling = oversampling;
        options.power_iterations = power_iterations;
        options.min_sketch_columns = 0;
        report_randomized(planes, args.size, args.rank, options);
      }
    }
  }
  std::printf("randomized SVD as the server runs it:\n");
  report_randomized(planes, args.size, args.rank, RandomizedSvdOptions{});

  const double numpy_rate = numpy_like_images_per_second(photos);
  std::printf("numpy.linalg.svd's work (float64 dgesdd, full U and V, all cores): %.2f images/s\n",
              numpy_rate);
  auto exact = make_cpu_backend({.threads = 0, .svd_method = CpuSvdMethod::exact});
  auto automatic = make_cpu_backend({.threads = 0, .svd_method = CpuSvdMethod::automatic});
  const double exact_rate = images_per_second(*exact, photos, args.rank);
  const double automatic_rate = images_per_second(*automatic, photos, args.rank);
  std::printf("backend decompose, all cores: exact %.2f images/s, automatic %.2f images/s "
              "(%.1fx)\n",
              exact_rate, automatic_rate, automatic_rate / exact_rate);
  std::printf("automatic / numpy-like: %.1fx\n", automatic_rate / numpy_rate);
  return 0;
}
