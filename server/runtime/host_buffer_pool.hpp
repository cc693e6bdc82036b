#pragma once
// Recycled host memory for reconstruction outputs that leave the server as they are (the
// zero-copy Reconstruct path: the backend writes the pixels into a buffer, gRPC sends that
// buffer, then gives it back) and for PNG's raw pixels before encoding. The memory comes from
// the backend, so on the GPU it is page-locked and the device-to-host copy lands in it directly. Allocating page-locked memory is slow and
// pins RAM, so buffers are kept for reuse, up to a byte cap (like Triton's
// --pinned-memory-pool-byte-size); beyond the cap a request gets ordinary memory instead, never
// an error. Nothing is zero-filled: the backend writes every byte.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "kernels/backend.hpp"

namespace svdserve {

namespace detail {
struct HostBufferPoolState;
}

struct HostBufferPoolStats {
  std::size_t capacity_bytes = 0;  // the cap on pool memory
  std::size_t pooled_bytes = 0;    // pool memory held: lent out or idle
  std::size_t in_use_bytes = 0;    // lent out now, pool and fallback memory
  uint64_t reuses = 0;             // acquisitions served by an idle buffer
  uint64_t allocations = 0;        // pool buffers made by the backend
  uint64_t fallbacks = 0;          // served by ordinary memory (cap reached, or none left)
};

// A buffer lent by a HostBufferPool; goes back when destroyed, from any thread. Move-only.
class HostBuffer {
 public:
  HostBuffer() noexcept = default;
  HostBuffer(HostBuffer&& other) noexcept { swap(other); }
  HostBuffer& operator=(HostBuffer other) noexcept {  // gives back what this held
    swap(other);
    return *this;
  }
  ~HostBuffer();

  [[nodiscard]] std::byte* data() const noexcept { return memory_.get(); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {memory_.get(), size_}; }
  [[nodiscard]] bool from_pool() const noexcept { return from_pool_; }

  void swap(HostBuffer& other) noexcept {
    std::swap(state_, other.state_);
    std::swap(memory_, other.memory_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    std::swap(from_pool_, other.from_pool_);
  }

 private:
  friend class HostBufferPool;

  // Keeps the pool's bookkeeping alive: gRPC may let go of a buffer after the pool is gone.
  std::shared_ptr<detail::HostBufferPoolState> state_;
  HostMemory memory_;
  std::size_t size_ = 0;      // what was asked for
  std::size_t capacity_ = 0;  // what the memory holds
  bool from_pool_ = false;    // else ordinary memory, freed when given back
};

class HostBufferPool {
 public:
  // capacity_bytes caps the pool memory held (lent out and idle). `backend` must outlive the
  // pool; buffers may outlive both (they free themselves).
  HostBufferPool(Backend& backend, std::size_t capacity_bytes);
  ~HostBufferPool();  // frees the idle buffers; those still lent out are freed when given back
  HostBufferPool(const HostBufferPool&) = delete;
  HostBufferPool& operator=(const HostBufferPool&) = delete;

  // A buffer of exactly `bytes` (contents undefined): an idle one that fits, a new one while
  // under the cap, else ordinary memory. Throws std::bad_alloc only when even that fails.
  [[nodiscard]] HostBuffer acquire(std::size_t bytes);

  [[nodiscard]] HostBufferPoolStats stats() const;

 private:
  Backend& backend_;
  std::shared_ptr<detail::HostBufferPoolState> state_;
};

}  // namespace svdserve
