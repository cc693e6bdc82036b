#include "tests/support/cublas_reference.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/reconstruct/pixel_convert.cuh"

namespace svdserve::reference {
namespace {

using gpu::ReconstructTask;
using gpu::StreamView;

constexpr uint32_t kInterleaveThreads = 256;
constexpr std::size_t kMaxInterleaveBlocks = 65535;  // grid-stride beyond this

// One thread per output value: consecutive threads write consecutive bytes (or floats) of the
// HWC output and read channel planes sequentially.
template <typename Pixel>
__global__ void __launch_bounds__(kInterleaveThreads)
    interleave_kernel(const float* __restrict__ planes, std::size_t plane_values,
                      uint32_t channels, Pixel* __restrict__ out, std::size_t values) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t index = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; index < values;
       index += stride) {
    const std::size_t pixel = index / channels;
    const auto channel = static_cast<uint32_t>(index - pixel * channels);
    out[index] = gpu::detail::to_pixel<Pixel>(planes[channel * plane_values + pixel]);
  }
}

// For the duration of the calls: the caller's stream, and pedantic FP32 math. cuBLAS's default
// math already does plain FP32 for SGEMM unless TF32 or FP32 emulation (BF16x9, CUDA 12.9+) is
// enabled on the handle or through the environment; pedantic rules all of those out, which is
// what an oracle needs. Both settings are restored afterwards, so the handle is left as found.
class OracleCublasScope {
 public:
  OracleCublasScope(cublasHandle_t handle, StreamView stream) : handle_(handle) {
    SVDSERVE_CUBLAS_CHECK(cublasGetMathMode(handle_, &saved_math_));
    SVDSERVE_CUBLAS_CHECK(cublasGetStream(handle_, &saved_stream_));
    SVDSERVE_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH));
    // Only when it differs: setting a stream also resets any user workspace of the handle.
    if (saved_stream_ != stream.value()) {
      const cublasStatus_t status = cublasSetStream(handle_, stream.value());
      if (status != CUBLAS_STATUS_SUCCESS) {
        cublasSetMathMode(handle_, saved_math_);
        SVDSERVE_CUBLAS_CHECK(status);
      }
      restore_stream_ = true;
    }
  }
  OracleCublasScope(const OracleCublasScope&) = delete;
  OracleCublasScope& operator=(const OracleCublasScope&) = delete;
  // Never throws; a failure to restore leaves settings that are still valid.
  ~OracleCublasScope() {
    if (restore_stream_) cublasSetStream(handle_, saved_stream_);
    cublasSetMathMode(handle_, saved_math_);
  }

 private:
  cublasHandle_t handle_;
  cublasMath_t saved_math_ = CUBLAS_DEFAULT_MATH;
  cudaStream_t saved_stream_ = nullptr;
  bool restore_stream_ = false;
};

void check_task(const ReconstructTask& task, OutputPixels pixels) {
  if (task.us == nullptr || task.v == nullptr || task.out == nullptr) {
    throw InvalidArgument("reconstruct task has a null factor or output pointer");
  }
  if (task.rank == 0 || task.rank > task.rank_kept) {
    throw InvalidArgument("reconstruct task rank " + std::to_string(task.rank) +
                          " is outside 1.." + std::to_string(task.rank_kept));
  }
  if (pixels == OutputPixels::f32 &&
      reinterpret_cast<std::uintptr_t>(task.out) % sizeof(float) != 0) {
    throw InvalidArgument("f32 reconstruction output must be float-aligned");
  }
}

template <typename Pixel>
void launch_interleave(const float* planes, const ImageShape& shape, void* out,
                       StreamView stream) {
  const std::size_t values = shape.values();
  const std::size_t blocks =
      std::min((values + kInterleaveThreads - 1) / kInterleaveThreads, kMaxInterleaveBlocks);
  interleave_kernel<Pixel><<<static_cast<unsigned>(blocks), kInterleaveThreads, 0,
                             stream.value()>>>(planes, shape.pixels_per_channel(),
                                               shape.channels, static_cast<Pixel*>(out), values);
  SVDSERVE_CUDA_CHECK_LAUNCH();
}

}  // namespace

void reconstruct_with_cublas(cublasHandle_t cublas, std::span<const ReconstructTask> tasks,
                             const ImageShape& shape, OutputPixels pixels, float* scratch,
                             StreamView stream) {
  if (tasks.empty() || shape.values() == 0) return;
  if (scratch == nullptr) throw InvalidArgument("cuBLAS reconstruction needs f32 scratch");
  for (const ReconstructTask& task : tasks) check_task(task, pixels);

  const OracleCublasScope scope(cublas, stream);
  const int width = static_cast<int>(shape.width);
  const int height = static_cast<int>(shape.height);
  const float one = 1.0F;
  const float zero = 0.0F;
  for (const ReconstructTask& task : tasks) {
    for (uint32_t channel = 0; channel < shape.channels; ++channel) {
      const float* us = task.us + std::size_t{channel} * shape.height * task.rank_kept;
      const float* v = task.v + std::size_t{channel} * shape.width * task.rank_kept;
      // The row-major H x W plane is the column-major W x H matrix V_k US_k^T.
      SVDSERVE_CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_T, width, height,
                                        static_cast<int>(task.rank), &one, v, width, us, height,
                                        &zero, scratch + channel * shape.pixels_per_channel(),
                                        width));
    }
    // Stream order makes reusing the scratch for the next task safe.
    if (pixels == OutputPixels::u8) {
      launch_interleave<uint8_t>(scratch, shape, task.out, stream);
    } else {
      launch_interleave<float>(scratch, shape, task.out, stream);
    }
  }
}

}  // namespace svdserve::reference
