#pragma once
// What all ReconstructStream calls together may hold: requests read and still computing (they
// sit in the compute queue and its batches), and the pixel bytes of answers not yet written (they
// sit in the host buffer pool). Each stream has its own limits as well (reconstruct_stream.cpp),
// but many streams together would still fill the compute queue (their items then fail with
// RESOURCE_EXHAUSTED) or the pool (answers spill to ordinary memory, whose device-to-host copies
// are slow; 64 streams of 4 items at 1024^2, H100: 1,247 items/s without this budget, 2,326
// with it). An answer stops counting against the queue's share when it is computed, so clients
// that read slowly hold pool bytes, not queue places.
//
// A stream that holds answers and finds the budget spent stops reading requests (gRPC flow
// control for its client) until one of its own answers is written: no stream waits on another,
// and a stream with nothing unwritten always reads, so each one makes progress. The check and
// the take are not one step, and a stream's first answer is always allowed, so the streams
// together may pass each limit by one answer a stream (in bytes: a stream's largest answer).

#include <atomic>
#include <cstdint>

namespace svdserve {

struct StreamBudgetSample {
  uint64_t computing = 0;
  uint64_t unwritten_bytes = 0;
  uint64_t max_computing = 0;
  uint64_t max_unwritten_bytes = 0;
};

class StreamBudget {
 public:
  StreamBudget(uint64_t max_computing, uint64_t max_unwritten_bytes) noexcept
      : max_computing_(max_computing), max_unwritten_bytes_(max_unwritten_bytes) {}
  StreamBudget(const StreamBudget&) = delete;
  StreamBudget& operator=(const StreamBudget&) = delete;

  // Whether a stream that already holds answers may read another request. Relaxed: a stale
  // value only moves the limit by the overshoot the header allows.
  [[nodiscard]] bool has_room() const noexcept {
    return computing_.load(std::memory_order_relaxed) < max_computing_ &&
           unwritten_bytes_.load(std::memory_order_relaxed) < max_unwritten_bytes_;
  }

  // A request's life: read (and its answer's pixel bytes once known), computed (or failed),
  // written (or dropped), with the bytes added for it.
  void read() noexcept { computing_.fetch_add(1, std::memory_order_relaxed); }
  void add_bytes(uint64_t bytes) noexcept {
    unwritten_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  void computed() noexcept { computing_.fetch_sub(1, std::memory_order_relaxed); }
  void written(uint64_t bytes) noexcept {
    unwritten_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  }

  [[nodiscard]] StreamBudgetSample sample() const noexcept {
    return {computing_.load(std::memory_order_relaxed),
            unwritten_bytes_.load(std::memory_order_relaxed), max_computing_,
            max_unwritten_bytes_};
  }

 private:
  const uint64_t max_computing_;
  const uint64_t max_unwritten_bytes_;
  std::atomic<uint64_t> computing_{0};
  std::atomic<uint64_t> unwritten_bytes_{0};
};

}  // namespace svdserve
