#include "kernels/gpu/common/device_memory_pool.hpp"

#include <string>
#include <utility>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"

namespace svdserve::gpu {

DeviceAllocation::~DeviceAllocation() {
  if (pool_ != nullptr && pointer_ != nullptr) pool_->release(pointer_, bytes_);
}

DeviceAllocation::DeviceAllocation(DeviceAllocation&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      pointer_(std::exchange(other.pointer_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceAllocation& DeviceAllocation::operator=(DeviceAllocation&& other) noexcept {
  if (this != &other) {
    if (pool_ != nullptr && pointer_ != nullptr) pool_->release(pointer_, bytes_);
    pool_ = std::exchange(other.pool_, nullptr);
    pointer_ = std::exchange(other.pointer_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceMemoryPool::DeviceMemoryPool(int device, std::size_t limit_bytes)
    : device_(device), limit_bytes_(limit_bytes) {
  cudaMemPoolProps properties{};
  properties.allocType = cudaMemAllocationTypePinned;
  properties.location.type = cudaMemLocationTypeDevice;
  properties.location.id = device;
  SVDSERVE_CUDA_CHECK(cudaMemPoolCreate(&pool_, &properties));
  // Keep up to the whole limit reserved between allocations: no cudaMalloc after warm-up.
  uint64_t threshold = limit_bytes;
  SVDSERVE_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold));
}

DeviceMemoryPool::~DeviceMemoryPool() {
  SVDSERVE_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(free_stream_.view().value()));
  SVDSERVE_CUDA_CHECK_NOTHROW(cudaMemPoolDestroy(pool_));
}

DeviceAllocation DeviceMemoryPool::allocate(std::size_t bytes, StreamView stream) {
  std::size_t used = used_bytes_.load();
  do {
    if (used + bytes > limit_bytes_) {
      throw ResourceExhausted("GPU factor memory full: " + std::to_string(used) + " of " +
                              std::to_string(limit_bytes_) + " bytes in use, " +
                              std::to_string(bytes) + " more needed");
    }
  } while (!used_bytes_.compare_exchange_weak(used, used + bytes));
  void* pointer = nullptr;
  const cudaError_t status = cudaMallocFromPoolAsync(&pointer, bytes, pool_, stream.value());
  if (status != cudaSuccess) {
    used_bytes_.fetch_sub(bytes);
    SVDSERVE_CUDA_CHECK(status);
  }
  return DeviceAllocation(this, pointer, bytes);
}

void DeviceMemoryPool::release(void* pointer, std::size_t bytes) noexcept {
  // Factors are let go on any thread, whose current device may be another of the host's.
  int current = device_;
  SVDSERVE_CUDA_CHECK_NOTHROW(cudaGetDevice(&current));
  if (current != device_) SVDSERVE_CUDA_CHECK_NOTHROW(cudaSetDevice(device_));
  const cudaError_t status = cudaFreeAsync(pointer, free_stream_.view().value());
  if (status != cudaSuccess) {
    // A lost device fails every free of its images: say so once, not once per image.
    if (!free_failed_.exchange(true)) {
      detail::log_if_failed(status, "cudaFreeAsync (later failures of this pool are not logged)");
    }
    (void)cudaGetLastError();
  }
  if (current != device_) SVDSERVE_CUDA_CHECK_NOTHROW(cudaSetDevice(current));
  used_bytes_.fetch_sub(bytes);
}

}  // namespace svdserve::gpu
