#include "server/runtime/host_buffer_pool.hpp"

#include <exception>
#include <iterator>
#include <map>
#include <mutex>

#include "server/runtime/logger.hpp"

namespace svdserve {
namespace detail {

// What buffers need after the pool is gone: where to go back to, and the counters.
struct HostBufferPoolState {
  explicit HostBufferPoolState(std::size_t capacity) : capacity_bytes(capacity) {}

  // Takes a buffer back. Returns the memory when it is to be freed, which the caller does
  // outside the lock (freeing page-locked memory is slow).
  [[nodiscard]] HostMemory give_back(HostMemory memory, std::size_t capacity,
                                     bool from_pool) noexcept {
    std::lock_guard lock(mutex);
    in_use_bytes -= capacity;
    if (!from_pool) return memory;
    if (!open) {
      pooled_bytes -= capacity;
      return memory;
    }
    try {
      idle.emplace(capacity, std::move(memory));
    } catch (...) {  // no room for the list node: free the buffer instead
      pooled_bytes -= capacity;
      return memory;
    }
    return {};
  }

  const std::size_t capacity_bytes;
  mutable std::mutex mutex;
  std::multimap<std::size_t, HostMemory> idle;  // by capacity; guarded by mutex
  bool open = true;                             // guarded by mutex; false once the pool is gone
  std::size_t pooled_bytes = 0;                 // guarded by mutex
  std::size_t in_use_bytes = 0;                 // guarded by mutex
  uint64_t reuses = 0;                          // guarded by mutex
  uint64_t allocations = 0;                     // guarded by mutex
  uint64_t fallbacks = 0;                       // guarded by mutex
};

}  // namespace detail

HostBuffer::~HostBuffer() {
  if (state_ == nullptr) return;  // empty or moved from
  // Whatever give_back hands back is freed here, after its lock is released.
  HostMemory unused = state_->give_back(std::move(memory_), capacity_, from_pool_);
}

HostBufferPool::HostBufferPool(Backend& backend, std::size_t capacity_bytes)
    : backend_(backend),
      state_(std::make_shared<detail::HostBufferPoolState>(capacity_bytes)) {}

HostBufferPool::~HostBufferPool() {
  std::multimap<std::size_t, HostMemory> idle;  // freed after the lock is released
  std::lock_guard lock(state_->mutex);
  state_->open = false;
  for (const auto& [capacity, memory] : state_->idle) state_->pooled_bytes -= capacity;
  idle.swap(state_->idle);
}

HostBuffer HostBufferPool::acquire(std::size_t bytes) {
  HostBuffer buffer;
  if (bytes == 0) return buffer;
  detail::HostBufferPoolState& state = *state_;
  // Idle buffers given up to make room for this one; freed once the lock is released.
  std::multimap<std::size_t, HostMemory> evicted;
  bool room_reserved = false;
  {
    std::lock_guard lock(state.mutex);
    // Best fit among the idle buffers, as long as at most half of it goes unused.
    if (auto fit = state.idle.lower_bound(bytes);
        fit != state.idle.end() && fit->first - bytes <= bytes) {
      buffer.capacity_ = fit->first;
      buffer.memory_ = std::move(fit->second);
      state.idle.erase(fit);
      state.in_use_bytes += buffer.capacity_;
      state.reuses += 1;
      buffer.state_ = state_;
      buffer.size_ = bytes;
      buffer.from_pool_ = true;
      return buffer;
    }
    // None fits: give up idle buffers of other sizes, largest first, until a new one is under
    // the cap. Room is reserved here so that concurrent callers cannot overshoot it together.
    if (bytes <= state.capacity_bytes) {
      while (state.pooled_bytes + bytes > state.capacity_bytes && !state.idle.empty()) {
        auto largest = std::prev(state.idle.end());
        state.pooled_bytes -= largest->first;
        evicted.insert(state.idle.extract(largest));
      }
      room_reserved = state.pooled_bytes + bytes <= state.capacity_bytes;
      if (room_reserved) state.pooled_bytes += bytes;
    }
  }
  evicted.clear();

  if (room_reserved) {
    try {
      buffer.memory_ = backend_.allocate_output_memory(bytes);
      buffer.from_pool_ = true;
    } catch (const std::exception& e) {
      log().warn("host buffer pool: the backend could not allocate bytes={} error=\"{}\"; "
                 "using ordinary memory",
                 bytes, e.what());
      std::lock_guard lock(state.mutex);
      state.pooled_bytes -= bytes;
    }
  }
  if (!buffer.from_pool_) buffer.memory_ = allocate_aligned_host_memory(bytes);

  std::lock_guard lock(state.mutex);
  state.in_use_bytes += bytes;
  (buffer.from_pool_ ? state.allocations : state.fallbacks) += 1;
  buffer.state_ = state_;
  buffer.size_ = bytes;
  buffer.capacity_ = bytes;
  return buffer;
}

HostBufferPoolStats HostBufferPool::stats() const {
  std::lock_guard lock(state_->mutex);
  return {state_->capacity_bytes, state_->pooled_bytes, state_->in_use_bytes,
          state_->reuses,         state_->allocations,  state_->fallbacks};
}

}  // namespace svdserve
