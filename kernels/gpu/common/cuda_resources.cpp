#include "kernels/gpu/common/cuda_resources.hpp"

#include "kernels/gpu/common/cuda_check.hpp"

namespace svdserve::gpu {
namespace detail {

void StreamDeleter::operator()(cudaStream_t stream) const noexcept {
  SVDSERVE_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream));
}
void EventDeleter::operator()(cudaEvent_t event) const noexcept {
  SVDSERVE_CUDA_CHECK_NOTHROW(cudaEventDestroy(event));
}
void CublasDeleter::operator()(cublasHandle_t handle) const noexcept { cublasDestroy(handle); }
void CusolverDeleter::operator()(cusolverDnHandle_t handle) const noexcept {
  cusolverDnDestroy(handle);
}

}  // namespace detail

void StreamView::synchronize() const { SVDSERVE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

Stream::Stream() {
  cudaStream_t stream = nullptr;
  SVDSERVE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_.reset(stream);
}

Event::Event(bool timing, bool blocking_sync) {
  cudaEvent_t event = nullptr;
  const unsigned flags = (timing ? cudaEventDefault : cudaEventDisableTiming) |
                         (blocking_sync ? cudaEventBlockingSync : 0u);
  SVDSERVE_CUDA_CHECK(cudaEventCreateWithFlags(&event, flags));
  event_.reset(event);
}

void Event::record(StreamView stream) const {
  SVDSERVE_CUDA_CHECK(cudaEventRecord(event_.get(), stream.value()));
}

void Event::synchronize() const { SVDSERVE_CUDA_CHECK(cudaEventSynchronize(event_.get())); }

float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0;
  SVDSERVE_CUDA_CHECK(cudaEventElapsedTime(&ms, start.value(), stop.value()));
  return ms;
}

CublasHandle::CublasHandle(StreamView stream) {
  cublasHandle_t handle = nullptr;
  SVDSERVE_CUBLAS_CHECK(cublasCreate(&handle));
  handle_.reset(handle);
  SVDSERVE_CUBLAS_CHECK(cublasSetStream(handle, stream.value()));
}

CusolverHandle::CusolverHandle(StreamView stream) {
  cusolverDnHandle_t handle = nullptr;
  SVDSERVE_CUSOLVER_CHECK(cusolverDnCreate(&handle));
  handle_.reset(handle);
  SVDSERVE_CUSOLVER_CHECK(cusolverDnSetStream(handle, stream.value()));
}

void* DeviceMemory::allocate(std::size_t bytes) {
  void* pointer = nullptr;
  SVDSERVE_CUDA_CHECK(cudaMalloc(&pointer, bytes));
  return pointer;
}

void DeviceMemory::free(void* pointer) noexcept { SVDSERVE_CUDA_CHECK_NOTHROW(cudaFree(pointer)); }

void* PinnedMemory::allocate(std::size_t bytes) {
  void* pointer = nullptr;
  SVDSERVE_CUDA_CHECK(cudaMallocHost(&pointer, bytes));
  return pointer;
}

void PinnedMemory::free(void* pointer) noexcept {
  SVDSERVE_CUDA_CHECK_NOTHROW(cudaFreeHost(pointer));
}

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // "no device" is an answer, not a pending error
    return 0;
  }
  return count;
}

bool cuda_device_available() noexcept { return cuda_device_count() > 0; }

}  // namespace svdserve::gpu
