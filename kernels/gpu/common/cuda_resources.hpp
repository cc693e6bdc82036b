#pragma once
// Move-only owners of CUDA resources (RAII, nvbench/RMM style) and a cheap stream view that async
// functions take by value. Allocation and freeing live in cuda_resources.cpp only.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace svdserve::gpu {

// Non-owning; pass by value to everything that enqueues work.
class StreamView {
 public:
  constexpr StreamView() noexcept = default;
  constexpr explicit StreamView(cudaStream_t stream) noexcept : stream_(stream) {}
  [[nodiscard]] constexpr cudaStream_t value() const noexcept { return stream_; }
  void synchronize() const;  // this stream only, never the device

 private:
  cudaStream_t stream_ = nullptr;
};

namespace detail {
struct StreamDeleter {
  using pointer = cudaStream_t;
  void operator()(cudaStream_t stream) const noexcept;
};
struct EventDeleter {
  using pointer = cudaEvent_t;
  void operator()(cudaEvent_t event) const noexcept;
};
struct CublasDeleter {
  using pointer = cublasHandle_t;
  void operator()(cublasHandle_t handle) const noexcept;
};
struct CusolverDeleter {
  using pointer = cusolverDnHandle_t;
  void operator()(cusolverDnHandle_t handle) const noexcept;
};
}  // namespace detail

class Stream {
 public:
  Stream();  // non-blocking: never synchronises with the legacy default stream
  [[nodiscard]] StreamView view() const noexcept { return StreamView(stream_.get()); }

 private:
  std::unique_ptr<cudaStream_t, detail::StreamDeleter> stream_;
};

class Event {
 public:
  // timing: usable with elapsed_ms. blocking_sync: synchronize() sleeps instead of spinning (for
  // threads that wait on batches, so a waiting thread takes no CPU from the loaders).
  explicit Event(bool timing = false, bool blocking_sync = false);
  void record(StreamView stream) const;
  void synchronize() const;
  [[nodiscard]] cudaEvent_t value() const noexcept { return event_.get(); }
  // Milliseconds between two recorded timing events.
  [[nodiscard]] static float elapsed_ms(const Event& start, const Event& stop);

 private:
  std::unique_ptr<cudaEvent_t, detail::EventDeleter> event_;
};

// Library handles, bound to one stream when made (one per stream of the pool).
class CublasHandle {
 public:
  explicit CublasHandle(StreamView stream);
  [[nodiscard]] cublasHandle_t value() const noexcept { return handle_.get(); }

 private:
  std::unique_ptr<cublasHandle_t, detail::CublasDeleter> handle_;
};

class CusolverHandle {
 public:
  explicit CusolverHandle(StreamView stream);
  [[nodiscard]] cusolverDnHandle_t value() const noexcept { return handle_.get(); }

 private:
  std::unique_ptr<cusolverDnHandle_t, detail::CusolverDeleter> handle_;
};

// Where a Buffer's memory comes from. Defined in cuda_resources.cpp, the one allocator file.
struct DeviceMemory {
  static void* allocate(std::size_t bytes);
  static void free(void* pointer) noexcept;
};
// Page-locked host memory: what lets copies run asynchronously at full PCIe speed.
struct PinnedMemory {
  static void* allocate(std::size_t bytes);
  static void free(void* pointer) noexcept;
};

// Workspace and staging memory, made per stream context and reused: it grows on the first use of
// a larger shape and never on the hot path after that.
template <typename Memory>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t bytes) { reserve(bytes); }
  [[nodiscard]] void* data() const noexcept { return memory_.get(); }
  template <typename T>
  [[nodiscard]] T* as() const noexcept { return static_cast<T*>(memory_.get()); }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }

  // Grows (never shrinks) to at least `bytes`; contents are not kept.
  void reserve(std::size_t bytes) {
    if (bytes <= bytes_) return;
    memory_.reset();
    bytes_ = 0;
    memory_.reset(Memory::allocate(bytes));
    bytes_ = bytes;
  }
  // As reserve, with half again as much room, so that a slowly rising size does not reallocate
  // every time.
  void grow_to(std::size_t bytes) {
    if (bytes > bytes_) reserve(bytes + bytes / 2);
  }

 private:
  struct Free {
    void operator()(void* pointer) const noexcept { Memory::free(pointer); }
  };
  std::unique_ptr<void, Free> memory_;
  std::size_t bytes_ = 0;
};

using DeviceBuffer = Buffer<DeviceMemory>;
using PinnedBuffer = Buffer<PinnedMemory>;

// True when a CUDA device can be used (driver present, at least one device).
[[nodiscard]] bool cuda_device_available() noexcept;
// Devices this process sees (0 without a driver).
[[nodiscard]] int cuda_device_count() noexcept;

}  // namespace svdserve::gpu
