// The CPU backend: a truncated SVD per plane for decompose (kernels/cpu/svd.hpp), the fused
// tiled reconstruction per row band (kernels/cpu/reconstruct.hpp), both on a small pool of
// worker threads with one OpenBLAS thread each.

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/blas_kernels.hpp"
#include "kernels/cpu/host_factors.hpp"
#include "kernels/cpu/factors.hpp"
#include "kernels/cpu/reconstruct.hpp"
#include "kernels/cpu/svd.hpp"
#include "kernels/cpu/svd_cost.hpp"
#include "kernels/cpu/worker_pool.hpp"
#include "kernels/errors.hpp"
#include "kernels/trace.hpp"

namespace svdserve {
namespace {

// Reconstruction cuts images into row bands so a small batch still spreads over every worker.
// Aim for this many tasks per worker (load balance), but keep bands tall enough that the GEMM
// stays efficient and the per-task overhead negligible.
constexpr std::size_t kReconstructTasksPerWorker = 4;
constexpr uint32_t kMinRowsPerBand = 32;

[[nodiscard]] std::string shape_text(const ImageShape& shape) {
  return std::to_string(shape.width) + "x" + std::to_string(shape.height) + "x" +
         std::to_string(shape.channels);
}

[[nodiscard]] unsigned resolve_worker_count(unsigned threads) noexcept {
  if (threads != 0) return threads;
  return std::max(1U, std::thread::hardware_concurrency());
}

[[nodiscard]] std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string key = "model name";
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.starts_with(key)) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

struct BandPlan {
  uint32_t rows_per_band = 0;
  std::size_t bands_per_item = 0;
};

[[nodiscard]] BandPlan plan_bands(uint32_t height, std::size_t items, unsigned workers) noexcept {
  const std::size_t wanted_tasks = kReconstructTasksPerWorker * workers;
  const std::size_t most_bands = std::max<std::size_t>(1, height / kMinRowsPerBand);
  const std::size_t bands =
      std::clamp<std::size_t>((wanted_tasks + items - 1) / items, 1, most_bands);
  BandPlan plan;
  plan.rows_per_band = static_cast<uint32_t>((height + bands - 1) / bands);
  plan.bands_per_item = (height + plan.rows_per_band - 1) / plan.rows_per_band;
  return plan;
}

[[nodiscard]] bool all_finite(std::span<const float> values) noexcept {
  return std::ranges::all_of(values, [](float value) { return std::isfinite(value); });
}

// Every image present, one non-empty shape, and as many samples as the shape says.
[[nodiscard]] ImageShape validate_images(std::span<const DecodedImage* const> images) {
  for (std::size_t i = 0; i < images.size(); ++i) {
    if (images[i] == nullptr) {
      throw InvalidArgument("decompose got a null image at " + std::to_string(i));
    }
  }
  const ImageShape shape = images.front()->shape;
  if (shape.values() == 0) {
    throw InvalidArgument("cannot decompose an empty image (" + shape_text(shape) + ")");
  }
  for (std::size_t i = 0; i < images.size(); ++i) {
    const DecodedImage& image = *images[i];
    if (image.shape != shape) {
      throw InvalidArgument("a decompose batch must have one shape: image " + std::to_string(i) +
                            " is " + shape_text(image.shape) + ", image 0 is " + shape_text(shape));
    }
    const std::size_t expected = shape.values() * bytes_per_sample(image.type);
    if (image.samples.size() != expected) {
      throw InvalidArgument("image " + std::to_string(i) + " holds " +
                            std::to_string(image.samples.size()) + " bytes; its shape " +
                            shape_text(shape) + " needs " + std::to_string(expected));
    }
  }
  return shape;
}

// Factors this backend made; others mean the caller mixed up backends: a bug.
[[nodiscard]] const CpuFactors& cpu_factors_of(const Factors& factors) {
  const auto* cpu_factors = dynamic_cast<const CpuFactors*>(&factors);
  if (cpu_factors == nullptr) throw InternalError("factors that the CPU backend did not make");
  return *cpu_factors;
}

// The items' factors as CpuFactors, after checking every item; nothing is written before this.
[[nodiscard]] std::vector<const CpuFactors*> validate_items(
    std::span<const ReconstructItem> items) {
  std::vector<const CpuFactors*> factors;
  factors.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const ReconstructItem& item = items[i];
    const std::string which = "reconstruct item " + std::to_string(i);
    // Null or foreign factors mean the caller mixed up backends: a bug, not a bad request.
    const auto* cpu_factors = dynamic_cast<const CpuFactors*>(item.factors);
    if (cpu_factors == nullptr) {
      throw InternalError(which + (item.factors == nullptr
                                       ? " has no factors"
                                       : " has factors that the CPU backend did not make"));
    }
    const ImageShape& shape = cpu_factors->shape();
    if (!factors.empty() && shape != factors.front()->shape()) {
      throw InvalidArgument("a reconstruct batch must have one shape: " + which + " is " +
                            shape_text(shape) + ", item 0 is " +
                            shape_text(factors.front()->shape()));
    }
    if (item.rank == 0 || item.rank > cpu_factors->rank_kept()) {
      throw InvalidArgument(which + " asks for rank " + std::to_string(item.rank) +
                            "; the image keeps ranks 1.." +
                            std::to_string(cpu_factors->rank_kept()));
    }
    if (item.pixels != OutputPixels::u8 && item.pixels != OutputPixels::f32) {
      throw InvalidArgument(which + " asks for an unknown pixel encoding");
    }
    const std::size_t expected_bytes = shape.values() * bytes_per_value(item.pixels);
    if (item.output.size() != expected_bytes) {
      throw InvalidArgument(which + " has an output of " + std::to_string(item.output.size()) +
                            " bytes; a " + shape_text(shape) + " image needs " +
                            std::to_string(expected_bytes));
    }
    factors.push_back(cpu_factors);
  }
  return factors;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(unsigned workers, CpuSvdMethod svd_method)
      : svd_method_(svd_method),
        svd_workspaces_(workers), reconstruct_workspaces_(workers), pool_(workers) {
    // Parallelism comes from our workers (one task per plane, or per row band when
    // reconstructing), each calling single-threaded OpenBLAS: sgesdd's bidiagonalisation is
    // memory-bound BLAS2, so a second BLAS thread gains little, a second solve nearly 2x.
    // 512^2 sgesdd, 2 cores: 2 BLAS threads 1.0-1.1x one; 2 concurrent solves 1.7-2.0x.
    // One BLAS thread per call also cannot oversubscribe when pipeline threads overlap. The
    // setting is process-wide; nothing else in the server calls BLAS.
    const std::string kernel_choice = cpu_blas::use_best_kernels();
    openblas_set_num_threads(1);
    description_ = "CPU backend: " + std::to_string(workers) + " worker threads on " +
                   cpu_model_name() + " (" + std::to_string(std::thread::hardware_concurrency()) +
                   " hardware threads), " + openblas_get_config();
    if (!kernel_choice.empty()) description_ += " (" + kernel_choice + ")";
  }

  [[nodiscard]] std::string name() const override { return "cpu"; }
  [[nodiscard]] std::string device_description() const override { return description_; }

  [[nodiscard]] double decompose_seconds_estimate(const ImageShape& shape,
                                                  uint32_t rank) const override {
    return shape.channels * svd_cost_.plane_seconds(svd_method_, shape.height, shape.width, rank);
  }

  using Backend::decompose;
  [[nodiscard]] std::vector<std::shared_ptr<const Factors>> decompose(
      std::span<const DecodedImage* const> decoded, uint32_t max_rank,
      const StopCheck& stop) override {
    trace::ScopedRange range("cpu_decompose");
    if (max_rank == 0) throw InvalidArgument("max_rank must be at least 1");
    if (decoded.empty()) return {};
    const ImageShape shape = validate_images(decoded);
    const uint32_t rank = std::min(max_rank, shape.full_rank());
    const double plane_flops = truncated_svd_flops(svd_method_, shape.height, shape.width, rank);

    try {
      std::vector<ImageF32> images(decoded.size());
      pool_.run(images.size(), [&](std::size_t index, unsigned) {
        images[index] = to_planes(*decoded[index]);
      });
      // Once an image is stopped its remaining planes are skipped without asking again.
      std::vector<std::atomic<bool>> stopped(images.size());
      const auto stops = [&](std::size_t image) {
        if (stopped[image].load(std::memory_order_relaxed)) return true;
        if (!stop || !stop(image)) return false;
        stopped[image].store(true, std::memory_order_relaxed);
        return true;
      };
      // One task per plane: channels are independent SVDs.
      std::vector<PlaneSvd> planes(images.size() * shape.channels);
      std::vector<double> plane_energies(planes.size());
      pool_.run(planes.size(), [&](std::size_t index, unsigned worker) {
        const std::size_t image = index / shape.channels;
        const auto channel = static_cast<uint32_t>(index % shape.channels);
        if (stops(image)) return;
        const std::span<const float> plane = images[image].plane(channel);
        // No sum of squared floats overflows float64: it is finite exactly when every sample is.
        double energy = 0.0;
        for (const float value : plane) energy += double{value} * value;
        if (!std::isfinite(energy)) {
          throw InvalidArgument("image " + std::to_string(image) + " has a NaN or infinite value" +
                                " in channel " + std::to_string(channel));
        }
        if (std::sqrt(energy) > kMaxPlaneFrobeniusNorm) throw values_too_large(image, channel);
        PlaneSvd& svd = planes[index];
        const auto start = std::chrono::steady_clock::now();
        svd = truncated_svd(plane, shape.height, shape.width, rank, svd_method_,
                            svd_workspaces_[worker]);
        svd_cost_.record(plane_flops, std::chrono::duration<double>(
                                          std::chrono::steady_clock::now() - start).count());
        if (!all_finite(svd.singular_values) || !all_finite(svd.factors.u) ||
            !all_finite(svd.factors.vt)) {
          throw values_too_large(image, channel);
        }
        plane_energies[index] = energy;
      });

      std::vector<std::shared_ptr<const Factors>> factors;
      factors.reserve(images.size());
      for (std::size_t image = 0; image < images.size(); ++image) {
        if (stopped[image].load(std::memory_order_relaxed)) {
          factors.push_back(nullptr);
          continue;
        }
        std::vector<std::vector<float>> singular_values(shape.channels);
        std::vector<CpuChannelFactors> channels(shape.channels);
        for (uint32_t channel = 0; channel < shape.channels; ++channel) {
          PlaneSvd& plane = planes[image * shape.channels + channel];
          singular_values[channel] = std::move(plane.singular_values);
          channels[channel] = std::move(plane.factors);
        }
        double energy = 0.0;
        for (uint32_t channel = 0; channel < shape.channels; ++channel) {
          energy += plane_energies[image * shape.channels + channel];
        }
        factors.push_back(std::make_shared<const CpuFactors>(
            shape, rank, std::move(singular_values), std::move(channels), energy));
      }
      return factors;
    } catch (const std::bad_alloc&) {
      throw ResourceExhausted("not enough host memory to decompose " +
                              std::to_string(decoded.size()) + " images of " + shape_text(shape) +
                              " at rank " + std::to_string(rank));
    }
  }

  void reconstruct(std::span<const ReconstructItem> items) override {
    trace::ScopedRange range("cpu_reconstruct");
    if (items.empty()) return;
    const std::vector<const CpuFactors*> factors = validate_items(items);
    const uint32_t height = factors.front()->shape().height;
    const BandPlan plan = plan_bands(height, items.size(), pool_.size());

    try {
      pool_.run(items.size() * plan.bands_per_item, [&](std::size_t index, unsigned worker) {
        const std::size_t item = index / plan.bands_per_item;
        const auto first_row =
            static_cast<uint32_t>((index % plan.bands_per_item) * plan.rows_per_band);
        const RowBand band{first_row, std::min(plan.rows_per_band, height - first_row)};
        reconstruct_band(*factors[item], items[item].rank, items[item].pixels, items[item].output,
                         band, reconstruct_workspaces_[worker]);
      });
    } catch (const std::bad_alloc&) {
      throw ResourceExhausted("not enough host memory to reconstruct " +
                              std::to_string(items.size()) + " images of " +
                              shape_text(factors.front()->shape()));
    }
  }

  [[nodiscard]] HostFactors to_host(const Factors& factors) override {
    return svdserve::to_host(cpu_factors_of(factors));
  }
  [[nodiscard]] std::shared_ptr<const Factors> from_host(const HostFactors& factors) override {
    return cpu_factors_from_host(factors);
  }

  void start_profiling() override { throw_no_profiling(); }
  void stop_profiling() override { throw_no_profiling(); }

 private:
  [[noreturn]] static void throw_no_profiling() {
    throw FailedPrecondition("profiling needs the GPU backend; this server runs the CPU backend");
  }

  std::string description_;
  CpuSvdMethod svd_method_;
  CpuSvdCost svd_cost_;
  // One workspace per worker, indexed by the worker number the pool passes to each task, so no
  // two threads share one. They keep their largest size between calls.
  std::vector<SvdWorkspace> svd_workspaces_;
  std::vector<ReconstructWorkspace> reconstruct_workspaces_;
  WorkerPool pool_;  // Last: its threads stop before the workspaces they use are destroyed.
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(resolve_worker_count(options.threads), options.svd_method);
}

}  // namespace svdserve
