#pragma once
// Device memory for resident factors: a CUDA stream-ordered memory pool whose release threshold
// is the budget, so memory freed by evictions stays reserved and later allocations do not reach
// cudaMalloc. The pool accounts every byte and refuses (ResourceExhausted) past its limit.

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>

#include "kernels/gpu/common/cuda_resources.hpp"

namespace svdserve::gpu {

class DeviceMemoryPool;

// One allocation from the pool; freed (stream-ordered on the pool's own stream) when destroyed.
// Destroy it only once no stream still uses the memory (svdserve guarantees that: factors are
// released after the work that read them has been synchronised).
class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  DeviceAllocation(DeviceMemoryPool* pool, void* pointer, std::size_t bytes) noexcept
      : pool_(pool), pointer_(pointer), bytes_(bytes) {}
  ~DeviceAllocation();
  DeviceAllocation(DeviceAllocation&& other) noexcept;
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;

  [[nodiscard]] float* floats() const noexcept { return static_cast<float*>(pointer_); }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

 private:
  DeviceMemoryPool* pool_ = nullptr;
  void* pointer_ = nullptr;
  std::size_t bytes_ = 0;
};

class DeviceMemoryPool {
 public:
  DeviceMemoryPool(int device, std::size_t limit_bytes);
  ~DeviceMemoryPool();
  DeviceMemoryPool(const DeviceMemoryPool&) = delete;
  DeviceMemoryPool& operator=(const DeviceMemoryPool&) = delete;

  // Stream-ordered: the memory is usable by work enqueued on `stream` after this call.
  [[nodiscard]] DeviceAllocation allocate(std::size_t bytes, StreamView stream);

  [[nodiscard]] std::size_t used_bytes() const noexcept { return used_bytes_.load(); }
  [[nodiscard]] std::size_t limit_bytes() const noexcept { return limit_bytes_; }

 private:
  friend class DeviceAllocation;
  void release(void* pointer, std::size_t bytes) noexcept;

  const int device_;
  std::atomic<bool> free_failed_{false};  // a free failed: the device is lost
  const std::size_t limit_bytes_;
  cudaMemPool_t pool_ = nullptr;
  Stream free_stream_;
  std::atomic<std::size_t> used_bytes_{0};
};

}  // namespace svdserve::gpu
