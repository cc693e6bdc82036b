#pragma once
// The seam between the pipeline and the compute: the CPU backend (LAPACK + BLAS) and the GPU
// backend (cuSOLVER + CUDA kernels) both implement it. A backend is called from several worker
// threads at once; each call carries a whole batch of same-shaped images.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "kernels/cpu/svd_method.hpp"
#include "kernels/errors.hpp"
#include "kernels/factors.hpp"
#include "kernels/host_factors.hpp"
#include "kernels/image.hpp"
#include "kernels/jpeg_header.hpp"

namespace svdserve {

struct ReconstructItem {
  const Factors* factors = nullptr;  // Made by this backend.
  uint32_t rank = 0;                 // 1 .. factors->rank_kept()
  OutputPixels pixels = OutputPixels::u8;
  std::span<std::byte> output;       // shape.values() * bytes_per_value(pixels), HWC interleaved.
};

// Host memory that carries the function that frees it, so that it can outlive the call that made
// it: a reconstruction's output goes on to gRPC, which sends it after the pipeline is done.
struct HostMemoryFree {
  void (*free)(void*) noexcept = nullptr;
  void operator()(std::byte* pointer) const noexcept {
    if (pointer != nullptr) free(pointer);
  }
};
using HostMemory = std::unique_ptr<std::byte[], HostMemoryFree>;

namespace detail {
inline constexpr std::align_val_t kHostMemoryAlignment{64};  // a cache line
inline void free_aligned_host_memory(void* pointer) noexcept {
  ::operator delete(pointer, kHostMemoryAlignment);
}
}  // namespace detail

// Ordinary host memory on a cache line, not zeroed.
[[nodiscard]] inline HostMemory allocate_aligned_host_memory(std::size_t bytes) {
  return HostMemory(static_cast<std::byte*>(::operator new(bytes, detail::kHostMemoryAlignment)),
                    HostMemoryFree{&detail::free_aligned_host_memory});
}

// Device-side numbers for /metrics; the CPU backend has none.
struct BackendMetrics {
  std::size_t device_memory_used_bytes = 0;   // factor pool
  std::size_t device_memory_total_bytes = 0;
  std::vector<double> stream_busy_seconds;    // per stream, since start
  unsigned calls_running = 0;                 // per device of a multi-device backend
  uint64_t svd_matrices = 0;                  // solved by the batched (approximate) solver
  uint64_t svd_matrices_redone = 0;           // failed its residual check, redone exactly
  double svd_identity_error_range[2] = {0, 0};  // best and worst residual-identity error seen
};

// One device of a backend: the CPU backend and a one-GPU backend have one; the multi-device
// backend has one per GPU, indexed as Factors::device() indexes them.
struct DeviceInfo {
  int ordinal = 0;              // CUDA device ordinal; 0 on the CPU
  std::string description;
  std::size_t default_memory_budget_bytes = 0;  // factor-store budget when the config gives none
  std::size_t numa_node = 0;    // the host NUMA node nearest the device, where the host says
  bool numa_known = false;
  bool in_service = true;       // false once the device failed (DeviceFailure)
};

class Backend {
 public:
  virtual ~Backend() = default;

  [[nodiscard]] virtual std::string name() const = 0;                // "cpu" or "gpu"
  [[nodiscard]] virtual std::string device_description() const = 0;  // for GetServerInfo
  // Factor-store budget when the config gives none.
  [[nodiscard]] virtual std::size_t default_memory_budget_bytes() const { return std::size_t{1} << 30; }

  // Whether decompose() takes this JPEG undecoded (DecodedImage::jpeg) and decodes it itself,
  // as the GPU backend does with nvJPEG. Called from the loader threads for each JPEG.
  [[nodiscard]] virtual bool decodes_jpeg(const JpegHeader& /*header*/) const { return false; }

  // Whether the work for image `index` of a decompose batch should stop: its call was cancelled
  // or is past its deadline. Asked from the backend's threads before each plane (CPU) or chunk
  // of the batch (GPU), so a stopped image frees the compute within about one plane's time.
  using StopCheck = std::function<bool(std::size_t index)>;

  // Truncated SVD of each image (all of one shape), keeping min(max_rank, full rank) triplets.
  // An image that `stop` (may be empty) stops gets no factors (nullptr); the others are not
  // affected. Throws svdserve::Error: InvalidArgument for non-finite samples, ResourceExhausted
  // when the factors do not fit, InternalError when a solver fails.
  [[nodiscard]] virtual std::vector<std::shared_ptr<const Factors>> decompose(
      std::span<const DecodedImage* const> images, uint32_t max_rank, const StopCheck& stop) = 0;
  [[nodiscard]] std::vector<std::shared_ptr<const Factors>> decompose(
      std::span<const DecodedImage* const> images, uint32_t max_rank) {
    return decompose(images, max_rank, StopCheck{});
  }
  // The same for images held as float planes (tests, benchmarks).
  [[nodiscard]] std::vector<std::shared_ptr<const Factors>> decompose(
      std::span<const ImageF32* const> images, uint32_t max_rank,
      const StopCheck& stop = StopCheck{}) {
    std::vector<DecodedImage> decoded(images.size());
    std::vector<const DecodedImage*> pointers(images.size(), nullptr);  // null stays null
    for (std::size_t i = 0; i < images.size(); ++i) {
      if (images[i] == nullptr) continue;
      decoded[i] = to_decoded(*images[i]);
      pointers[i] = &decoded[i];
    }
    return decompose(pointers, max_rank, stop);
  }

  // Seconds of compute that decompose() would spend on one image of `shape` at `rank`
  // (1..shape.full_rank()), by the solver this backend would choose, on one of its workers: what
  // admission holds against a call's deadline and max_compute_ms. An estimate, not a bound.
  [[nodiscard]] virtual double decompose_seconds_estimate(const ImageShape& shape,
                                                          uint32_t rank) const = 0;

  // Writes U_k diag(S_k) Vt_k for each item (all of one shape, each with its own rank).
  virtual void reconstruct(std::span<const ReconstructItem> items) = 0;

  // reconstruct(), finished asynchronously: `done` is called exactly once, with nullptr when every
  // output is written or with the error. Items and their outputs must stay valid until then. The
  // GPU backend returns once the work is enqueued (it waits only for a free stream) and calls
  // `done` from a completion thread; this default runs everything on the caller's thread.
  using Completion = std::function<void(std::exception_ptr)>;
  virtual void reconstruct_async(std::vector<ReconstructItem> items, Completion done) {
    std::exception_ptr error;
    try {
      reconstruct(items);
    } catch (...) {
      error = std::current_exception();
    }
    done(error);
  }

  // An image's factors copied to host memory (for the repository), and factors made from such a
  // copy (an image loaded from it), reconstructing what the original did. Throws
  // ResourceExhausted when the backend has no memory left for them.
  // Both backends have them; a backend without (a test's) answers FailedPrecondition.
  [[nodiscard]] virtual HostFactors to_host(const Factors& /*factors*/) {
    throw FailedPrecondition("backend " + name() + " cannot copy factors to the host");
  }
  [[nodiscard]] virtual std::shared_ptr<const Factors> from_host(const HostFactors& /*factors*/) {
    throw FailedPrecondition("backend " + name() + " cannot load factors from the host");
  }

  // Host memory for reconstruct outputs, not zeroed (reconstruct writes every byte). The GPU
  // backend gives page-locked memory, which its device-to-host copy fills directly instead of
  // going through staging; this default gives ordinary memory. Throws when none is left.
  [[nodiscard]] virtual HostMemory allocate_output_memory(std::size_t bytes) {
    return allocate_aligned_host_memory(bytes);
  }

  [[nodiscard]] virtual BackendMetrics metrics() const { return {}; }

 protected:
  // reconstruct() for a backend whose work is reconstruct_async(): waits for its completion and
  // rethrows its error.
  void reconstruct_and_wait(std::span<const ReconstructItem> items) {
    std::promise<void> finished;
    reconstruct_async({items.begin(), items.end()}, [&](std::exception_ptr error) {
      if (error) {
        finished.set_exception(error);
      } else {
        finished.set_value();
      }
    });
    finished.get_future().get();
  }

 public:

  // The devices, in Factors::device() order, and each one's metrics in the same order.
  [[nodiscard]] virtual std::vector<DeviceInfo> devices() const {
    return {DeviceInfo{.ordinal = 0,
                       .description = device_description(),
                       .default_memory_budget_bytes = default_memory_budget_bytes()}};
  }
  [[nodiscard]] virtual std::vector<BackendMetrics> device_metrics() const { return {metrics()}; }

  // Whether the device still runs work (a small copy, waited for): after one device's context is
  // lost, the CUDA driver may have lost the others of the process too.
  [[nodiscard]] virtual bool responds() noexcept { return true; }

  // Called (from the thread that saw the failure) once per device taken out of service, with
  // what failed, so that the server logs it and the factor store drops what that device held:
  // the images reload elsewhere when used.
  using DeviceFailureHandler = std::function<void(std::size_t device, const std::string& reason)>;
  virtual void on_device_failure(DeviceFailureHandler /*handler*/) {}

  // Nsight Systems capture windows. The CPU backend throws FailedPrecondition.
  virtual void start_profiling() = 0;
  virtual void stop_profiling() = 0;
};

struct CpuBackendOptions {
  unsigned threads = 0;  // worker threads, one plane each at a time (0: hardware concurrency)
  CpuSvdMethod svd_method = CpuSvdMethod::automatic;
};

[[nodiscard]] std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options);

}  // namespace svdserve
