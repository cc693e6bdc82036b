#include "kernels/gpu/gpu_backend.hpp"

#include <cuda_profiler_api.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cmath>
#include <string>

#include "kernels/cpu/worker_pool.hpp"
#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/completion_threads.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/common/device_memory_pool.hpp"
#include "kernels/gpu/gpu_decompose.hpp"
#include "kernels/gpu/host_factors.hpp"
#include "kernels/gpu/gpu_reconstruct.hpp"
#include "kernels/gpu/jpeg/jpeg_decoder.hpp"
#include "kernels/gpu/reconstruct/policy.hpp"
#include "kernels/gpu/common/stream_pool.hpp"
#include "kernels/trace.hpp"

namespace svdserve::gpu {
namespace {

// The pool may briefly hold a batch more than the store's budget: factors are made before the
// store evicts to fit them.
constexpr double kPoolHeadroom = 1.1;

// Host threads for copy-out: a handful of cores copy from pinned memory at PCIe speed or more.
constexpr unsigned kCopyOutThreads = 4;

// Nominal flops per second (kernels/svd_flops.hpp) of one stream, for admission's estimates:
// Xgesvd, the slowest solver here, 11.5 1024^2 matrices/s = 320 (H100, PERFORMANCE.md section 3).
constexpr double kGpuSvdFlopsPerSecond = 300e9;

// Estimated seconds of a chunk of a decompose batch: the stop check runs between chunks, so a
// stopped call frees its stream within about this; 16 1024^2 RGB images at rank 64 (0.4 s) stay
// one batch.
constexpr double kDecomposeChunkSeconds = 1.0;

// Makes options.device current on the calling thread (the device is per thread in CUDA).
const GpuBackendOptions& on_device(const GpuBackendOptions& options) {
  SVDSERVE_CUDA_CHECK(cudaSetDevice(options.device));
  return options;
}

class GpuBackend final : public Backend {
 public:
  explicit GpuBackend(const GpuBackendOptions& options)
      : options_(on_device(options)),
        streams_(std::max(1u, options.streams), options.device),
        decompose_range_("gpu_decompose device=" + std::to_string(options.device)),
        reconstruct_range_("gpu_reconstruct_enqueue device=" + std::to_string(options.device)),
        // Where the policy can choose wgmma it reads the factors as wgmma operands: written at
        // decompose, next to the canonical ones (gpu_factors.hpp).
        wgmma_operands_(wants_wgmma_operands(current_reconstruct_arch())) {
    cudaDeviceProp properties{};
    SVDSERVE_CUDA_CHECK(cudaGetDeviceProperties(&properties, options.device));
    std::size_t free_bytes = 0, total_bytes = 0;
    SVDSERVE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    total_bytes_ = total_bytes;
    budget_bytes_ = options.budget_bytes != 0
                        ? options.budget_bytes
                        : static_cast<std::size_t>(options.memory_fraction * free_bytes);
    pool_ = std::make_unique<DeviceMemoryPool>(
        options.device, static_cast<std::size_t>(kPoolHeadroom * budget_bytes_));
    std::string no_jpeg_reason = "turned off";
    if (options.decode_jpeg) jpeg_decoder_ = JpegDecoder::create(no_jpeg_reason);
    if (jpeg_decoder_) {
      for (std::size_t i = 0; i < streams_.size(); ++i) {
        jpeg_states_.push_back(jpeg_decoder_->make_stream_state());
      }
    }
    int numa_node = -1;  // -1 where the host has no NUMA, or the driver does not say
    if (cudaDeviceGetAttribute(&numa_node, cudaDevAttrHostNumaId, options.device) != cudaSuccess) {
      (void)cudaGetLastError();
      numa_node = -1;
    }
    numa_node_ = numa_node;
    description_ = std::string(properties.name) + " (sm_" + std::to_string(properties.major) +
                   std::to_string(properties.minor) + ", " +
                   std::to_string(properties.multiProcessorCount) + " SMs, " +
                   std::to_string(total_bytes >> 30) + " GiB, " + std::to_string(streams_.size()) +
                   " streams; JPEG: " +
                   (jpeg_decoder_ ? jpeg_decoder_->description()
                                  : "decoded on the CPU (" + no_jpeg_reason + ")") +
                   ")";
  }

  // The members go on the device they were made on (cuBLAS wants its handle's device current).
  ~GpuBackend() override { SVDSERVE_CUDA_CHECK_NOTHROW(cudaSetDevice(options_.device)); }

  [[nodiscard]] bool decodes_jpeg(const JpegHeader& header) const override {
    return jpeg_decoder_ != nullptr && JpegDecoder::takes(header);
  }

  [[nodiscard]] std::string name() const override { return "gpu"; }
  [[nodiscard]] std::string device_description() const override { return description_; }
  [[nodiscard]] std::size_t default_memory_budget_bytes() const override { return budget_bytes_; }

  [[nodiscard]] double decompose_seconds_estimate(const ImageShape& shape,
                                                  uint32_t rank) const override {
    const int m = static_cast<int>(std::max(shape.width, shape.height));
    const int n = static_cast<int>(std::min(shape.width, shape.height));
    return shape.channels * solve_flops(m, n, static_cast<int>(rank), options_.svd_method) /
           kGpuSvdFlopsPerSecond;
  }

  using Backend::decompose;
  std::vector<std::shared_ptr<const Factors>> decompose(std::span<const DecodedImage* const> images,
                                                        uint32_t max_rank,
                                                        const StopCheck& stop) override {
    trace::ScopedRange range(decompose_range_.c_str());
    if (images.empty()) return {};
    on_device(options_);
    if (max_rank == 0) throw InvalidArgument("max_rank must be at least 1");
    for (const DecodedImage* image : images) {
      if (image == nullptr) throw InvalidArgument("decompose got a null image");
    }
    const ImageShape& shape = images.front()->shape;
    const uint32_t rank = std::min(max_rank, shape.full_rank());
    const double image_seconds = decompose_seconds_estimate(shape, rank);
    const std::size_t chunk_images =
        image_seconds * static_cast<double>(images.size()) <= kDecomposeChunkSeconds
            ? images.size()
            : std::max<std::size_t>(1, static_cast<std::size_t>(kDecomposeChunkSeconds /
                                                                image_seconds));
    auto context = streams_.acquire();
    const JpegDecoding jpeg{jpeg_decoder_.get(),
                            jpeg_decoder_ ? jpeg_states_[context->index].get() : nullptr};
    std::vector<std::shared_ptr<const Factors>> factors(images.size());  // stopped: null
    for (std::size_t first = 0; first < images.size(); first += chunk_images) {
      std::vector<const DecodedImage*> live;
      std::vector<std::size_t> positions;
      for (std::size_t i = first; i < std::min(first + chunk_images, images.size()); ++i) {
        if (stop && stop(i)) continue;
        live.push_back(images[i]);
        positions.push_back(i);
      }
      if (live.empty()) continue;
      DecomposeOutcome outcome = decompose_batch(*context, live, rank, options_.svd_method,
                                                 *pool_, wgmma_operands_, jpeg);
      record(outcome.report);
      for (std::size_t i = 0; i < live.size(); ++i) {
        factors[positions[i]] = std::move(outcome.factors[i]);
      }
    }
    return factors;
  }

  [[nodiscard]] HostFactors to_host(const Factors& factors) override {
    on_device(options_);
    const auto* gpu_factors = dynamic_cast<const GpuFactors*>(&factors);
    if (gpu_factors == nullptr) throw InternalError("factors that the GPU backend did not make");
    auto context = streams_.acquire();
    return gpu::to_host(*gpu_factors, context->stream.view());
  }

  [[nodiscard]] std::shared_ptr<const Factors> from_host(const HostFactors& factors) override {
    on_device(options_);
    auto context = streams_.acquire();
    return gpu_factors_from_host(factors, *pool_, wgmma_operands_, context->stream.view());
  }

  void reconstruct(std::span<const ReconstructItem> items) override {
    reconstruct_and_wait(items);
  }

  void reconstruct_async(std::vector<ReconstructItem> items, Completion done) override {
    if (items.empty()) return done(nullptr);
    std::shared_ptr<StreamPool::Lease> lease;
    auto finish = std::make_shared<Completion>(std::move(done));
    try {
      trace::ScopedRange range(reconstruct_range_.c_str());
      on_device(options_);
      lease = std::make_shared<StreamPool::Lease>(streams_.acquire());
      auto staged = std::make_shared<StagedOutputs>(
          enqueue_reconstruct(**lease, items));
      completions_.post([this, lease, staged = std::move(staged), finish]() mutable {
        std::exception_ptr failure;
        try {
          (*lease)->completed.synchronize();  // throws the batch's CUDA error, if any
          copy_out(**lease, *staged, copy_workers_);
        } catch (...) {
          failure = std::current_exception();
        }
        lease.reset();  // the stream goes back before the callers are answered (and encode)
        (*finish)(failure);
      });
      lease.reset();  // the posted task holds the stream until the batch is out
      return;
    } catch (...) {
      // Work may be enqueued already: the stream must be idle before it goes back to the pool.
      if (lease) {
        (void)cudaStreamSynchronize((*lease)->stream.view().value());
        (void)cudaGetLastError();  // the error is reported by finish, not by the next launch
      }
      lease.reset();
      (*finish)(std::current_exception());
    }
  }

  // Page-locked: enqueue_reconstruct copies from the device straight into it, with no staging
  // and no copy_out. Freed by cudaFreeHost from whichever thread lets it go.
  [[nodiscard]] HostMemory allocate_output_memory(std::size_t bytes) override {
    on_device(options_);
    return HostMemory(static_cast<std::byte*>(PinnedMemory::allocate(bytes)),
                      HostMemoryFree{&PinnedMemory::free});
  }

  [[nodiscard]] BackendMetrics metrics() const override {
    BackendMetrics metrics;
    metrics.device_memory_used_bytes = pool_->used_bytes();
    metrics.device_memory_total_bytes = total_bytes_;
    metrics.stream_busy_seconds = streams_.busy_seconds();
    metrics.svd_matrices = svd_matrices_.load();
    metrics.svd_matrices_redone = svd_matrices_redone_.load();
    std::lock_guard lock(identity_mutex_);
    metrics.svd_identity_error_range[0] = identity_range_[0];
    metrics.svd_identity_error_range[1] = identity_range_[1];
    return metrics;
  }

  [[nodiscard]] std::vector<DeviceInfo> devices() const override {
    return {DeviceInfo{.ordinal = options_.device,
                       .description = description_,
                       .default_memory_budget_bytes = budget_bytes_,
                       .numa_node = static_cast<std::size_t>(std::max(numa_node_, 0)),
                       .numa_known = numa_node_ >= 0}};
  }

  [[nodiscard]] bool responds() noexcept override {
    if (cudaSetDevice(options_.device) != cudaSuccess) return false;
    const bool ok = cudaMemset(probe_.data(), 0, probe_.size()) == cudaSuccess &&
                    cudaDeviceSynchronize() == cudaSuccess;
    if (!ok) (void)cudaGetLastError();
    return ok;
  }

  void start_profiling() override { SVDSERVE_CUDA_CHECK(cudaProfilerStart()); }
  void stop_profiling() override { SVDSERVE_CUDA_CHECK(cudaProfilerStop()); }

 private:
  void record(const SvdReport& report) {
    svd_matrices_ += static_cast<uint64_t>(report.checked);
    svd_matrices_redone_ += static_cast<uint64_t>(report.recomputed);
    if (report.checked > 0) {
      std::lock_guard lock(identity_mutex_);
      identity_range_[0] = std::min(identity_range_[0], report.best_identity_error);
      identity_range_[1] = std::max(identity_range_[1], report.worst_identity_error);
    }
  }

  GpuBackendOptions options_;
  StreamPool streams_;
  std::string decompose_range_;    // NVTX range names, with the device
  std::string reconstruct_range_;
  bool wgmma_operands_;
  int numa_node_ = -1;
  DeviceBuffer probe_{sizeof(float)};  // what responds() writes
  std::size_t budget_bytes_ = 0;
  std::size_t total_bytes_ = 0;
  std::atomic<uint64_t> svd_matrices_{0};
  std::atomic<uint64_t> svd_matrices_redone_{0};
  mutable std::mutex identity_mutex_;
  double identity_range_[2] = {1e300, 0.0};  // guarded by identity_mutex_
  std::unique_ptr<DeviceMemoryPool> pool_;
  // nvJPEG, when the library loads: one decoding state per stream, indexed like the streams.
  std::unique_ptr<JpegDecoder> jpeg_decoder_;
  std::vector<std::unique_ptr<JpegStreamState>> jpeg_states_;
  std::string description_;
  // Threads that copy reconstructions out of pinned staging (see copy_out).
  WorkerPool copy_workers_{kCopyOutThreads};
  // Last: destroyed first, so every posted batch finishes while streams and pool still exist.
  CompletionThreads completions_{2 * static_cast<unsigned>(streams_.size())};
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(const GpuBackendOptions& options) {
  if (!cuda_device_available()) {
    throw FailedPrecondition("no CUDA device is usable (no driver, no GPU, or not visible)");
  }
  return std::make_unique<GpuBackend>(options);
}

}  // namespace svdserve::gpu
