#include "server/process/backend_selection.hpp"

#include "kernels/errors.hpp"
#include "server/runtime/logger.hpp"

#if SVDSERVE_HAVE_CUDA
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/gpu_backend.hpp"
#endif

namespace svdserve {
namespace {

#if SVDSERVE_HAVE_CUDA
std::unique_ptr<Backend> make_gpu(const v1::ServerConfig& config) {
  gpu::GpuBackendOptions options;
  options.device = static_cast<int>(config.gpu_device());
  options.streams = config.gpu_streams();
  options.budget_bytes = config.memory_budget_bytes();
  options.memory_fraction = config.gpu_memory_fraction();
  options.svd_method = config.gpu_svd() == v1::GPU_SVD_EXACT ? gpu::SvdMethod::gesvd
                                                             : gpu::SvdMethod::automatic;
  options.decode_jpeg = config.gpu_jpeg() != v1::GPU_JPEG_OFF;
  return gpu::make_gpu_backend(options);
}
#endif

}  // namespace

std::unique_ptr<Backend> make_backend(const v1::ServerConfig& config) {
  const bool want_gpu = config.backend() != v1::BACKEND_KIND_CPU;
#if SVDSERVE_HAVE_CUDA
  if (want_gpu) {
    if (gpu::cuda_device_available()) {
      auto backend = make_gpu(config);
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

std::size_t memory_budget_bytes(const v1::ServerConfig& config, const Backend& backend) {
  return config.memory_budget_bytes() != 0 ? config.memory_budget_bytes()
                                           : backend.default_memory_budget_bytes();
}

}  // namespace svdserve
