// Decompose benchmark: every SVD method on batches of real photos (grey, resized with
// INTER_AREA), per size and max rank, in one run:
//   - matrices/s: GPU methods timed with CUDA events on the solver's stream after a warm-up
//     solve; CPU LAPACK sgesdd (the CPU backend's truncated_svd, one OpenBLAS thread per matrix,
//     std::threads over the batch, all cores) by wall clock;
//   - accuracy of the first two matrices of each batch, in float64 on the host: the rank-k error
//     ||A - U_k S_k V_k^T||_F divided by the optimal one (from LAPACK dgesdd singular values;
//     1.000 is perfect) at k = max rank and k = 16, and the relative error of sigma_1;
//   - for gesvda, the residual-identity error the server's check uses (tolerance 2e-5), so that
//     "is the check too strict, or is gesvda inaccurate?" is answered by the same rows.
// Slow cells are bounded: a per-matrix time is probed first (or estimated from the previous size
// as O(m n^2)), then only as many matrices are timed as fit in kTimedCapS ("timed" column);
// cells whose single matrix would exceed the cap print "skipped (cap)". gesvd, gesvdj and CPU
// sgesdd compute the full SVD whatever the rank, so they run once per size at full rank and each
// max rank reads its leading columns.
//
// usage: svdserve_svd_bench [--quick] [--json FILE] [--images DIR] [--cpu-only]
// The photos come from --images or SVDSERVE_TEST_IMAGES; exit status 2 for a usage error.

#include <cblas.h>
#include <cuda_runtime_api.h>
#include <lapacke.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_images.hpp"
#include "bench/svd_methods.hpp"
#include "kernels/cpu/svd.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/svd/gesvda.hpp"

namespace {

using namespace svdserve;
using Clock = std::chrono::steady_clock;

constexpr double kTimedCapS = 1.5;        // the most one timed run of a cell may take
constexpr double kSingleMatrixCapS = 4.0;  // skip a method when one matrix would take longer
constexpr double kTotalBudgetS = 320.0;   // the whole run stays under 6 minutes
constexpr double kMinTimedS = 0.2;        // repeat fast solves until about this long
constexpr int kMaxRepeats = 5;
constexpr int kAccuracyMatrices = 2;
constexpr int kSmallRank = 16;
constexpr double kAccurateRatio = 1.001;  // the bar for "as good as the optimum"
// At full rank the optimum is 0 and fp32 roundoff decides: CPU sgesdd measured 2e-5 relative at
// 1024^2, so 1e-4 separates roundoff from a wrong factorisation.
constexpr double kFullRankRelativeBound = 1e-4;

// A column-major m x n matrix is a row-major image n pixels high and m wide (m >= n).
struct Shape {
  int m, n, batch;
  [[nodiscard]] std::string text() const { return std::to_string(m) + "x" + std::to_string(n); }
  [[nodiscard]] std::size_t values() const { return std::size_t(m) * n; }
};

struct Method {
  std::string name;
  bool cpu = false;
  bench::SvdBenchMethod gpu_method = bench::SvdBenchMethod::gesvd;
  bench::SvdBenchOptions options;
  bool full_svd = false;  // cost independent of the rank: solved once per size at full rank
  bool batched = false;   // one call for the batch: warm up with the timed count
  bool top_k_only = false;
};

Method gpu_method(std::string name, bench::SvdBenchMethod solver_method) {
  using bench::SvdBenchMethod;
  Method m;
  m.name = std::move(name);
  m.gpu_method = solver_method;
  m.full_svd = solver_method == SvdBenchMethod::gesvd || solver_method == SvdBenchMethod::gesvdj;
  m.batched = solver_method == SvdBenchMethod::gesvda_batched ||
              solver_method == SvdBenchMethod::gesvda_unchecked ||
              solver_method == SvdBenchMethod::randomized;
  m.top_k_only = solver_method == SvdBenchMethod::gesvdr ||
                 solver_method == SvdBenchMethod::randomized;
  return m;
}

std::vector<Method> methods() {
  using bench::SvdBenchMethod;
  std::vector<Method> list;
  list.push_back(gpu_method("gesvda_unchecked", SvdBenchMethod::gesvda_unchecked));
  list.push_back(gpu_method("gesvda_batched", SvdBenchMethod::gesvda_batched));
  list.push_back(gpu_method("gesvdj", SvdBenchMethod::gesvdj));
  list.push_back(gpu_method("gesvd", SvdBenchMethod::gesvd));
  for (int iterations : {2, 4}) {
    Method m = gpu_method("gesvdr_it" + std::to_string(iterations), SvdBenchMethod::gesvdr);
    m.options.gesvdr_iterations = iterations;  // oversampling: as many as the rank (default)
    list.push_back(m);
  }
  Method cpu;
  cpu.name = "cpu_sgesdd";
  cpu.cpu = true;
  cpu.full_svd = true;
  list.push_back(cpu);
  // Our batched randomized SVD (kernels/gpu/svd/randomized_svd.hpp), with its default sketch.
  list.push_back(gpu_method("randomized", SvdBenchMethod::randomized));
  return list;
}

// ---- inputs ----------------------------------------------------------------------------------

std::vector<cv::Mat> load_photos(const std::string& dir) {
  static const std::set<std::string> kExtensions = {".jpg", ".jpeg", ".png", ".bmp", ".tif",
                                                    ".tiff", ".webp", ".pgm", ".ppm"};
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string ext = entry.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    if (entry.is_regular_file() && kExtensions.count(ext)) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<cv::Mat> photos;
  for (const auto& path : paths) {
    cv::Mat grey = cv::imread(path.string(), cv::IMREAD_GRAYSCALE);
    if (!grey.empty()) photos.push_back(grey);
  }
  return photos;
}

// The batch, column-major m x n each. Photos repeat when the batch is larger than the folder:
// repeats are flipped and then gamma-shifted, so that no two matrices are equal.
std::vector<float> make_batch(const std::vector<cv::Mat>& photos, const Shape& shape) {
  std::vector<float> batch(shape.values() * shape.batch);
  const int count = static_cast<int>(photos.size());
  for (int i = 0; i < shape.batch; ++i) {
    const int cycle = i / count;
    cv::Mat resized, variant, as_float;
    cv::resize(photos[i % count], resized, cv::Size(shape.m, shape.n), 0, 0, cv::INTER_AREA);
    static constexpr int kFlips[] = {2 /* none */, 1, 0, -1};
    if (kFlips[cycle % 4] == 2) variant = resized;
    else cv::flip(resized, variant, kFlips[cycle % 4]);
    variant.convertTo(as_float, CV_32F);
    const double gamma = 1.0 + 0.05 * (cycle / 4);
    float* out = batch.data() + shape.values() * i;
    for (int row = 0; row < shape.n; ++row) {
      const float* in = as_float.ptr<float>(row);
      for (int col = 0; col < shape.m; ++col) {
        const float v = in[col];
        out[std::size_t(row) * shape.m + col] =
            gamma == 1.0 ? v : static_cast<float>(255.0 * std::pow(v / 255.0, gamma));
      }
    }
  }
  return batch;
}

// ---- float64 reference and errors ---------------------------------------------------------

struct Reference {
  std::vector<double> sigma;  // n values, largest first
  double norm = 0.0;
  [[nodiscard]] double optimal_error(int k) const {
    double dropped = 0.0;
    for (std::size_t j = k; j < sigma.size(); ++j) dropped += sigma[j] * sigma[j];
    return std::sqrt(dropped);
  }
};

Reference reference_of(const float* a, const Shape& shape) {
  std::vector<double> copy(a, a + shape.values());
  Reference ref;
  for (double v : copy) ref.norm += v * v;
  ref.norm = std::sqrt(ref.norm);
  ref.sigma.resize(shape.n);
  const lapack_int info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', shape.m, shape.n, copy.data(),
                                         shape.m, ref.sigma.data(), nullptr, 1, nullptr, 1);
  if (info != 0) throw std::runtime_error("reference dgesdd info " + std::to_string(info));
  return ref;
}

// Runs task(i) for i in 0..count-1 on every core.
void parallel_for(int count, const std::function<void(int)>& task) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  std::vector<std::string> errors(threads);
  for (unsigned t = 0; t < std::min<unsigned>(threads, count); ++t) {
    pool.emplace_back([&, t] {
      try {
        for (int i = next++; i < count; i = next++) task(i);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (auto& thread : pool) thread.join();
  for (const auto& error : errors) {
    if (!error.empty()) throw std::runtime_error(error);
  }
}

// Host copies of a method's factors of one matrix: U m x r and V n x r column-major, S r.
struct HostFactors {
  int rank = 0;
  std::vector<float> u, s, v;
};

// ||A - U_k S_k V_k^T||_F in float64 (OpenBLAS, all threads).
double rank_k_error(const float* a, const Shape& shape, const HostFactors& f, int k) {
  std::vector<double> residual(a, a + shape.values());
  std::vector<double> us(std::size_t(shape.m) * k), v(std::size_t(shape.n) * k);
  for (int j = 0; j < k; ++j) {
    for (int i = 0; i < shape.m; ++i) {
      us[std::size_t(j) * shape.m + i] = double(f.u[std::size_t(j) * shape.m + i]) * f.s[j];
    }
    for (int i = 0; i < shape.n; ++i) v[std::size_t(j) * shape.n + i] = f.v[std::size_t(j) * shape.n + i];
  }
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, shape.m, shape.n, k, -1.0, us.data(),
              shape.m, v.data(), shape.n, 1.0, residual.data(), shape.m);
  double sum = 0.0;
  for (double r : residual) sum += r * r;
  return std::sqrt(sum);
}

// err / optimal; where the optimum is at roundoff level (k near full rank) the ratio means
// nothing, so it is the relative error ||A - A_k|| / ||A|| instead, flagged by `relative`.
struct ErrorRatio {
  double value = NAN;
  bool relative = false;
};

ErrorRatio error_ratio(const float* a, const Shape& shape, const HostFactors& f, int k,
                       const Reference& ref) {
  const double error = rank_k_error(a, shape, f, k);
  const double optimal = ref.optimal_error(k);
  if (optimal > 1e-5 * ref.norm) return {error / optimal, false};
  return {error / ref.norm, true};
}

// ---- cells ----------------------------------------------------------------------------------

struct Cell {
  std::string shape, method, status = "ok", notes;
  int batch = 0, rank = 0, timed = 0;
  double matrices_per_s = 0.0, ratio_vs_gesvd = NAN;
  ErrorRatio worst_k_rank, worst_k_small;
  double sigma1_rel_error = NAN;
  double identity_error = NAN;  // gesvda only
  int failed_check = 0, recomputed = 0, not_converged = 0, info_failures = 0;
};

struct GpuContext {
  gpu::Stream stream;
  gpu::CusolverHandle cusolver{stream.view()};
  gpu::CublasHandle cublas{stream.view()};
  bench::SvdBenchSolver solver{stream.view(), cusolver.value(), cublas.value()};
  gpu::DeviceBuffer a, u, s, v;
};

// One solve of the first `count` matrices at `rank`: seconds, the report, factors of the first
// kAccuracyMatrices.
struct SolveResult {
  double seconds = 0.0;
  bench::SvdBenchReport report;
  std::vector<HostFactors> factors;
};

SolveResult run_gpu(GpuContext& gpu_context, const Method& method, const Shape& shape,
                    const std::vector<double>& norms, int count, int rank, int repeats) {
  gpu::SvdBatch batch{shape.m, shape.n, count, rank, gpu_context.a.as<float>(),
                      gpu_context.u.as<float>(), gpu_context.s.as<float>(),
                      gpu_context.v.as<float>(), std::span(norms.data(), count)};
  gpu::Event start(true), stop(true);
  SolveResult result;
  start.record(gpu_context.stream.view());
  for (int r = 0; r < repeats; ++r) {
    result.report = gpu_context.solver.solve(batch, method.gpu_method, method.options);
  }
  stop.record(gpu_context.stream.view());
  stop.synchronize();
  result.seconds = gpu::Event::elapsed_ms(start, stop) * 1e-3 / repeats;
  for (int i = 0; i < std::min(count, kAccuracyMatrices); ++i) {
    HostFactors f;
    f.rank = rank;
    f.u.resize(std::size_t(shape.m) * rank);
    f.v.resize(std::size_t(shape.n) * rank);
    f.s.resize(rank);
    SVDSERVE_CUDA_CHECK(cudaMemcpy(f.u.data(), batch.u + f.u.size() * i,
                                   f.u.size() * sizeof(float), cudaMemcpyDeviceToHost));
    SVDSERVE_CUDA_CHECK(cudaMemcpy(f.v.data(), batch.v + f.v.size() * i,
                                   f.v.size() * sizeof(float), cudaMemcpyDeviceToHost));
    SVDSERVE_CUDA_CHECK(cudaMemcpy(f.s.data(), batch.s + std::size_t(rank) * i,
                                   f.s.size() * sizeof(float), cudaMemcpyDeviceToHost));
    result.factors.push_back(std::move(f));
  }
  return result;
}

// CPU LAPACK: the CPU backend's sgesdd path, one OpenBLAS thread per matrix, all cores.
SolveResult run_cpu(const std::vector<float>& host_batch, const Shape& shape, int count, int rank,
                    int repeats) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<SvdWorkspace> workspaces(threads);
  std::vector<PlaneSvd> kept(std::min(count, kAccuracyMatrices));
  openblas_set_num_threads(1);
  const auto started = Clock::now();
  for (int r = 0; r < repeats; ++r) {
    std::atomic<int> next{0};
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < std::min<unsigned>(threads, count); ++t) {
      pool.emplace_back([&, t] {
        for (int i = next++; i < count; i = next++) {
          // The column-major m x n matrix read row-major is its transpose, n x m: A^T = U' S V'^T.
          std::span<const float> plane(host_batch.data() + shape.values() * i, shape.values());
          PlaneSvd svd =
              truncated_svd(plane, shape.n, shape.m, rank, CpuSvdMethod::exact, workspaces[t]);
          if (i < kAccuracyMatrices) kept[i] = std::move(svd);
        }
      });
    }
    for (auto& thread : pool) thread.join();
  }
  SolveResult result;
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count() / repeats;
  openblas_set_num_threads(static_cast<int>(threads));
  for (const PlaneSvd& svd : kept) {
    // A = V' S U'^T: A's U is V' (vt row-major rank x m = column-major m x rank, as it lies);
    // A's V is U' (n x rank row-major), transposed into column-major.
    HostFactors f;
    f.rank = rank;
    f.s = svd.singular_values;
    f.u.assign(svd.factors.vt.begin(), svd.factors.vt.end());
    f.v.resize(std::size_t(shape.n) * rank);
    for (int i = 0; i < shape.n; ++i) {
      for (int j = 0; j < rank; ++j) {
        f.v[std::size_t(j) * shape.n + i] = svd.factors.u[std::size_t(i) * rank + j];
      }
    }
    result.factors.push_back(std::move(f));
  }
  return result;
}

// Keeps only the leading k columns' worth of a full-rank result.
HostFactors leading(const HostFactors& full, const Shape& shape, int k) {
  HostFactors f;
  f.rank = k;
  f.u.assign(full.u.begin(), full.u.begin() + std::size_t(shape.m) * k);
  f.v.assign(full.v.begin(), full.v.begin() + std::size_t(shape.n) * k);
  f.s.assign(full.s.begin(), full.s.begin() + k);
  return f;
}

std::string format_ratio(const ErrorRatio& r) {
  if (std::isnan(r.value)) return "-";
  char text[32];
  if (r.relative) std::snprintf(text, sizeof text, "rel %.1e", r.value);
  else std::snprintf(text, sizeof text, "%.5f", r.value);
  return text;
}

std::string json_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream out;
  out.precision(9);
  out << v;
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  bool cpu_only = false;
  std::string json_path;
  std::string images_flag;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") quick = true;
    else if (arg == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (arg == "--images" && i + 1 < argc) images_flag = argv[++i];
    else if (arg == "--cpu-only") cpu_only = true;  // checks the host side without a GPU
    else {
      std::fprintf(stderr,
                   "usage: svdserve_svd_bench [--quick] [--json FILE] [--images DIR] [--cpu-only]\n");
      return bench::kUsageExitCode;
    }
  }
  const std::optional<std::string> images = bench::images_folder(argv[0], images_flag);
  if (!images) return bench::kUsageExitCode;
  const std::string& images_dir = *images;
  if (!cpu_only && !gpu::cuda_device_available()) {
    std::fprintf(stderr, "FAIL: no CUDA device\n");
    return 1;
  }
  const auto run_start = Clock::now();
  const auto elapsed_s = [&] { return std::chrono::duration<double>(Clock::now() - run_start).count(); };
  const std::vector<cv::Mat> photos = load_photos(images_dir);
  if (photos.empty()) {
    std::fprintf(stderr, "FAIL: no readable images in %s (--images DIR or SVDSERVE_TEST_IMAGES)\n",
                 images_dir.c_str());
    return 1;
  }
  const std::vector<Shape> shapes =
      quick ? std::vector<Shape>{{256, 256, 64}, {1024, 1024, 4}}
            : std::vector<Shape>{{256, 256, 256}, {512, 512, 64}, {1024, 1024, 16},
                                 {2048, 2048, 2}, {1920, 1080, 4}};
  std::string device_name = "none (--cpu-only)";
  if (!cpu_only) {
    cudaDeviceProp properties{};
    SVDSERVE_CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));
    device_name = properties.name;
  }
  std::printf("device: %s; host: %u threads; %zu photos from %s\n", device_name.c_str(),
              std::thread::hardware_concurrency(), photos.size(), images_dir.c_str());

  // Inputs and float64 references (the slow part: every core, one OpenBLAS thread each).
  std::vector<std::vector<float>> batches;
  for (const Shape& shape : shapes) batches.push_back(make_batch(photos, shape));
  std::vector<std::vector<Reference>> references(shapes.size());
  for (auto& refs : references) refs.resize(kAccuracyMatrices);
  openblas_set_num_threads(1);
  parallel_for(static_cast<int>(shapes.size()) * kAccuracyMatrices, [&](int job) {
    const std::size_t s = job / kAccuracyMatrices;
    const int i = job % kAccuracyMatrices;
    if (i < shapes[s].batch) {
      references[s][i] = reference_of(batches[s].data() + shapes[s].values() * i, shapes[s]);
    }
  });
  openblas_set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  std::printf("float64 references: %.1f s\n", elapsed_s());

  std::optional<GpuContext> gpu_context;
  if (!cpu_only) gpu_context.emplace();
  const std::vector<Method> method_list = methods();
  // Seconds per matrix last measured per method, and at what m n^2, to estimate larger sizes.
  std::map<std::string, std::pair<double, double>> seconds_per_matrix;
  std::vector<Cell> cells;
  bool all_ran = true;

  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const Shape& shape = shapes[si];
    const std::vector<float>& host = batches[si];
    std::vector<double> norms(shape.batch);
    for (int i = 0; i < shape.batch; ++i) {
      double sum = 0.0;
      for (std::size_t j = 0; j < shape.values(); ++j) {
        const double v = host[shape.values() * i + j];
        sum += v * v;
      }
      norms[i] = sum;
    }
    const std::size_t bytes = host.size() * sizeof(float);
    if (gpu_context) {
      gpu_context->a.grow_to(bytes);
      gpu_context->u.grow_to(bytes);  // enough for full rank: m x n per matrix
      gpu_context->v.grow_to(std::size_t(shape.n) * shape.n * shape.batch * sizeof(float));
      gpu_context->s.grow_to(std::size_t(shape.n) * shape.batch * sizeof(float));
      SVDSERVE_CUDA_CHECK(
          cudaMemcpy(gpu_context->a.data(), host.data(), bytes, cudaMemcpyHostToDevice));
    }
    const double cost = double(shape.m) * shape.n * shape.n;

    std::vector<int> ranks = {64, 128, shape.n};
    ranks.erase(std::remove_if(ranks.begin(), ranks.end(), [&](int r) { return r > shape.n; }),
                ranks.end());
    const int first_cell = static_cast<int>(cells.size());
    for (const Method& method : method_list) {
      if (cpu_only && !method.cpu) continue;
      std::optional<SolveResult> full_result;  // full_svd methods: one solve for every rank
      std::string full_status;
      int full_timed = 0;
      for (int rank : ranks) {
        Cell cell;
        cell.shape = shape.text();
        cell.method = method.name;
        cell.batch = shape.batch;
        cell.rank = rank;
        try {
          if (method.top_k_only && rank == shape.n) {
            cell.status = "n/a (top-k)";
            cells.push_back(cell);
            continue;
          }
          SolveResult result;
          if (method.full_svd && full_result) {
            result = *full_result;
            cell.timed = full_timed;
            cell.notes = "full SVD, truncated";
          } else if (method.full_svd && !full_status.empty()) {
            cell.status = full_status;
            cells.push_back(cell);
            continue;
          } else {
            const int solve_rank = method.full_svd ? shape.n : rank;
            const auto solve = [&](int count, int repeats) {
              return method.cpu ? run_cpu(host, shape, count, solve_rank, repeats)
                                : run_gpu(*gpu_context, method, shape, norms, count, solve_rank,
                                          repeats);
            };
            // Estimate from a smaller size before spending anything on this one.
            if (auto known = seconds_per_matrix.find(method.name); known != seconds_per_matrix.end()) {
              const double estimate = known->second.first * cost / known->second.second;
              if (estimate > kSingleMatrixCapS) {
                cell.status = "skipped (cap)";
                cell.notes = "estimated " + json_number(estimate) + " s per matrix";
              }
            }
            if (elapsed_s() > kTotalBudgetS) cell.status = "skipped (budget)";
            if (cell.status != "ok") {
              if (method.full_svd) full_status = cell.status;
              cells.push_back(cell);
              continue;
            }
            // Probe: one matrix (all cores' worth on the CPU; the whole batch for fast batched
            // gesvda); this is also the warm-up of per-matrix workspaces.
            const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
            const int probe_count =
                method.gpu_method == bench::SvdBenchMethod::gesvda_unchecked && !method.cpu
                    ? shape.batch
                : method.cpu ? std::min<int>(shape.batch, threads)
                             : 1;
            const SolveResult probe = solve(probe_count, 1);
            // Latency of one matrix (on the CPU: of one wave of `threads` matrices in parallel).
            const double single = method.cpu ? probe.seconds : probe.seconds / probe_count;
            seconds_per_matrix[method.name] = {single, cost};
            if (single > kSingleMatrixCapS) {
              cell.status = "skipped (cap)";
              cell.notes = "one matrix took " + json_number(single) + " s";
              if (method.full_svd) full_status = cell.status;
              cells.push_back(cell);
              continue;
            }
            // Time the whole batch if it fits the cap, else the leading matrices that do.
            const double batch_estimate =
                method.cpu ? single * std::ceil(double(shape.batch) / threads)
                           : single * shape.batch;
            const int least = method.cpu ? std::min<int>(shape.batch, threads) : 1;
            int count = shape.batch;
            if (batch_estimate > kTimedCapS) {
              count = std::max(least, static_cast<int>(shape.batch * kTimedCapS / batch_estimate));
            }
            const double run_estimate = batch_estimate * count / shape.batch;
            const int repeats = std::clamp(
                static_cast<int>(kMinTimedS / std::max(run_estimate, 1e-6)), 1, kMaxRepeats);
            if (method.batched && count != probe_count) (void)solve(count, 1);  // warm-up
            result = solve(count, repeats);
            cell.timed = count;
            if (method.full_svd) {
              full_result = result;
              full_timed = count;
              cell.notes = "full SVD, truncated";
            }
          }
          cell.matrices_per_s = cell.timed / result.seconds;
          cell.failed_check = result.report.failed_check;
          cell.recomputed = result.report.recomputed;
          cell.not_converged = result.report.not_converged;
          cell.info_failures = result.report.info_failures;
          if (method.gpu_method == bench::SvdBenchMethod::gesvda_batched ||
              method.gpu_method == bench::SvdBenchMethod::gesvda_unchecked) {
            if (!method.cpu) cell.identity_error = result.report.worst_identity_error;
          }
          // Accuracy of the leading matrices, worst of them.
          for (std::size_t i = 0; i < result.factors.size(); ++i) {
            const HostFactors f = leading(result.factors[i], shape, rank);
            const float* a = host.data() + shape.values() * i;
            const Reference& ref = references[si][i];
            const ErrorRatio at_rank = error_ratio(a, shape, f, rank, ref);
            const ErrorRatio at_small = error_ratio(a, shape, f, std::min(kSmallRank, rank), ref);
            const auto worse = [](ErrorRatio& worst, const ErrorRatio& r) {
              if (std::isnan(worst.value) || r.value > worst.value) worst = r;
            };
            worse(cell.worst_k_rank, at_rank);
            worse(cell.worst_k_small, at_small);
            const double s1 = std::abs(f.s[0] - ref.sigma[0]) / ref.sigma[0];
            cell.sigma1_rel_error = std::isnan(cell.sigma1_rel_error)
                                        ? s1
                                        : std::max(cell.sigma1_rel_error, s1);
          }
        } catch (const std::exception& e) {
          cell.status = "error";
          cell.notes = e.what();
          all_ran = false;
          if (method.full_svd) full_status = "error";
        }
        cells.push_back(cell);
      }
    }
    // Ratios to gesvd in the same (size, rank).
    for (std::size_t c = first_cell; c < cells.size(); ++c) {
      for (std::size_t g = first_cell; g < cells.size(); ++g) {
        if (cells[g].method == "gesvd" && cells[g].rank == cells[c].rank &&
            cells[g].matrices_per_s > 0 && cells[c].matrices_per_s > 0) {
          cells[c].ratio_vs_gesvd = cells[c].matrices_per_s / cells[g].matrices_per_s;
        }
      }
    }
    // Table for this size.
    std::printf("\n== %s (batch %d) ==\n%-5s %-17s %6s %11s %9s %12s %12s %9s %9s  %s\n",
                shape.text().c_str(), shape.batch, "rank", "method", "timed", "matrices/s",
                "vs gesvd", "err/opt k=r", "err/opt k=16", "s1 relerr", "identity", "status");
    for (int rank : ranks) {
      for (std::size_t c = first_cell; c < cells.size(); ++c) {
        const Cell& cell = cells[c];
        if (cell.rank != rank) continue;
        std::string status = cell.status;
        if (cell.failed_check) status += " failed_check=" + std::to_string(cell.failed_check);
        if (cell.recomputed) status += " redone=" + std::to_string(cell.recomputed);
        if (cell.info_failures) status += " info_failures=" + std::to_string(cell.info_failures);
        if (cell.not_converged) status += " not_converged=" + std::to_string(cell.not_converged);
        if (!cell.notes.empty()) status += " (" + cell.notes + ")";
        std::printf("%-5d %-17s %6d %11.1f %9.2f %12s %12s %9.1e %9.1e  %s\n", cell.rank,
                    cell.method.c_str(), cell.timed, cell.matrices_per_s, cell.ratio_vs_gesvd,
                    format_ratio(cell.worst_k_rank).c_str(),
                    format_ratio(cell.worst_k_small).c_str(), cell.sigma1_rel_error,
                    cell.identity_error, status.c_str());
      }
    }
    std::fflush(stdout);
  }

  // The choice per (size, rank): the fastest method whose rank-k errors are within 1.001x.
  std::printf("\n== choice: fastest method with err/opt <= %.3f at k=r and k=16 ==\n",
              kAccurateRatio);
  for (const Shape& shape : shapes) {
    for (int rank : {64, 128, shape.n}) {
      if (rank > shape.n) continue;
      const Cell* best = nullptr;
      for (const Cell& cell : cells) {
        if (cell.shape != shape.text() || cell.rank != rank || cell.status != "ok") continue;
        const auto accurate = [](const ErrorRatio& r) {
          return r.relative ? r.value <= kFullRankRelativeBound : r.value <= kAccurateRatio;
        };
        if (!accurate(cell.worst_k_rank) || !accurate(cell.worst_k_small)) continue;
        if (!best || cell.matrices_per_s > best->matrices_per_s) best = &cell;
      }
      std::printf("%-10s rank %-5d %s\n", shape.text().c_str(), rank,
                  best ? (best->method + " at " + json_number(best->matrices_per_s) + " matrices/s")
                             .c_str()
                       : "none accurate");
    }
  }
  // The open question about the server's gesvda check.
  for (const Cell& cell : cells) {
    if (cell.method != "gesvda_unchecked" || cell.status != "ok") continue;
    const bool accurate = !cell.worst_k_rank.relative && cell.worst_k_rank.value <= kAccurateRatio;
    std::printf("gesvda %-10s rank %-5d err/opt %s identity error %.1e -> %s\n",
                cell.shape.c_str(), cell.rank, format_ratio(cell.worst_k_rank).c_str(),
                cell.identity_error,
                cell.worst_k_rank.relative ? "full rank: see relative error"
                : accurate && cell.identity_error > gpu::kGesvdaIdentityTolerance
                    ? "ACCURATE, check too strict"
                : accurate ? "accurate, check passes"
                           : "INACCURATE");
  }

  if (!json_path.empty()) {
    std::ofstream json(json_path);
    json << "{\"device\": \"" << json_escape(device_name) << "\", \"host_threads\": "
         << std::thread::hardware_concurrency() << ", \"quick\": " << (quick ? "true" : "false")
         << ", \"seconds\": " << json_number(elapsed_s()) << ", \"cells\": [";
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const Cell& c = cells[i];
      json << (i ? "," : "") << "\n {\"shape\": \"" << c.shape << "\", \"batch\": " << c.batch
           << ", \"rank\": " << c.rank << ", \"method\": \"" << c.method << "\", \"status\": \""
           << json_escape(c.status) << "\", \"notes\": \"" << json_escape(c.notes)
           << "\", \"timed\": " << c.timed
           << ", \"matrices_per_s\": " << json_number(c.matrices_per_s)
           << ", \"ratio_vs_gesvd\": " << json_number(c.ratio_vs_gesvd)
           << ", \"error_ratio_k_rank\": " << json_number(c.worst_k_rank.value)
           << ", \"error_k_rank_is_relative\": " << (c.worst_k_rank.relative ? "true" : "false")
           << ", \"error_ratio_k16\": " << json_number(c.worst_k_small.value)
           << ", \"error_k16_is_relative\": " << (c.worst_k_small.relative ? "true" : "false")
           << ", \"sigma1_rel_error\": " << json_number(c.sigma1_rel_error)
           << ", \"identity_error\": " << json_number(c.identity_error)
           << ", \"failed_check\": " << c.failed_check << ", \"recomputed\": " << c.recomputed
           << ", \"not_converged\": " << c.not_converged
           << ", \"info_failures\": " << c.info_failures << "}";
    }
    json << "\n]}\n";
  }
  std::printf("\n%s: %zu cells in %.1f s\n", all_ran ? "PASS" : "FAIL (some cells errored)",
              cells.size(), elapsed_s());
  return all_ran ? 0 : 1;
}
