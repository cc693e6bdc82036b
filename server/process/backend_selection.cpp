#include "server/process/backend_selection.hpp"

#include "kernels/errors.hpp"
#include "kernels/multi_device_backend.hpp"
#include "server/process/gpu_devices.hpp"
#include "server/runtime/logger.hpp"

#if SVDSERVE_HAVE_CUDA
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/gpu_backend.hpp"
#endif

namespace svdserve {
namespace {

#if SVDSERVE_HAVE_CUDA
std::unique_ptr<Backend> make_gpu(const v1::ServerConfig& config, int device) {
  gpu::GpuBackendOptions options;
  options.device = device;
  options.streams = config.gpu_streams();
  options.budget_bytes = config.memory_budget_bytes();
  options.memory_fraction = config.gpu_memory_fraction();
  options.svd_method = config.gpu_svd() == v1::GPU_SVD_EXACT ? gpu::SvdMethod::gesvd
                                                             : gpu::SvdMethod::automatic;
  options.decode_jpeg = config.gpu_jpeg() != v1::GPU_JPEG_OFF;
  return gpu::make_gpu_backend(options);
}

// Each device its own backend, sharded over; with one device too, so that a device that fails
// is taken out of service the same way (clients see UNAVAILABLE, health turns NOT_SERVING).
std::unique_ptr<Backend> make_gpus(const v1::ServerConfig& config) {
  const int visible = gpu::cuda_device_count();
  std::vector<int> ordinals = parse_gpu_devices(config.gpu_devices()).value_or(std::vector<int>{});
  if (ordinals.empty()) {
    for (int d = 0; d < visible; ++d) ordinals.push_back(d);
  }
  for (int ordinal : ordinals) {
    if (ordinal >= visible) {
      throw FailedPrecondition("gpu_devices names device " + std::to_string(ordinal) +
                               ", but this process sees " + std::to_string(visible) +
                               " (CUDA ordinals 0.." + std::to_string(visible - 1) + ")");
    }
  }
  // A device that cannot start (failed, or taken by another process) is left out, and the
  // server runs on the others: its images reload onto them from the repository.
  std::vector<std::unique_ptr<Backend>> devices;
  for (int ordinal : ordinals) {
    try {
      devices.push_back(make_gpu(config, ordinal));
    } catch (const Error& e) {
      log().error("gpu_device_left_out ordinal={} reason=\"{}\"", ordinal, e.what());
    }
  }
  if (devices.empty()) {
    throw FailedPrecondition("none of the GPUs in gpu_devices could be started; the log says why");
  }
  return std::make_unique<MultiDeviceBackend>(std::move(devices));
}
#endif

}  // namespace

std::unique_ptr<Backend> make_backend(const v1::ServerConfig& config) {
  const bool want_gpu = config.backend() != v1::BACKEND_KIND_CPU;
#if SVDSERVE_HAVE_CUDA
  if (want_gpu) {
    if (gpu::cuda_device_available()) {
      auto backend = make_gpus(config);
      log().info("backend=gpu device=\"{}\"", backend->device_description());
      return backend;
    }
    if (config.backend() == v1::BACKEND_KIND_GPU) {
      throw FailedPrecondition("backend GPU was asked for, but no CUDA device is usable (driver "
                               "missing, no GPU, or not passed to the container: docker run "
                               "--gpus all); use --backend cpu");
    }
    log().warn("backend=cpu reason=\"no CUDA device is usable; falling back to the CPU backend\"");
  }
#else
  if (config.backend() == v1::BACKEND_KIND_GPU) {
    throw FailedPrecondition(
        "backend GPU was asked for, but this build has no GPU backend (built without CUDA); use "
        "--backend cpu");
  }
  if (want_gpu) log().info("backend=cpu reason=\"built without CUDA\"");
#endif
  CpuBackendOptions options;
  options.threads = config.cpu_compute_threads();
  options.svd_method =
      config.cpu_svd() == v1::CPU_SVD_EXACT ? CpuSvdMethod::exact : CpuSvdMethod::automatic;
  return make_cpu_backend(options);
}

std::vector<std::size_t> device_budget_bytes(const v1::ServerConfig& config,
                                             const Backend& backend) {
  std::vector<std::size_t> budgets;
  for (const DeviceInfo& device : backend.devices()) {
    budgets.push_back(config.memory_budget_bytes() != 0 ? config.memory_budget_bytes()
                                                        : device.default_memory_budget_bytes);
  }
  return budgets;
}

}  // namespace svdserve
