#pragma once
// What all ReconstructStream calls together may have computing: requests handed to the pipeline
// and not yet computed sit in the compute queue and its batches. Each stream has its own limits as well
// (stream_reactors.cpp), but many streams together would still fill the compute queue (their
// items then fail with RESOURCE_EXHAUSTED). The bytes of their answers count against the
// server-wide UnsentBytesBudget like every other call's (unsent_bytes_budget.hpp), which keeps
// them within the host buffer pool (64 streams of 4 items at 1024^2, H100: 1,247 items/s when
// answers spilled out of the pool, 2,326 when held to it).
//
// A stream that holds answers and finds this budget spent stops reading requests (gRPC flow
// control for its client) until one of its own answers is written: no stream waits on another,
// and a stream with nothing unwritten always reads, so each one makes progress. The check and
// the take are not one step, so the streams together may pass the limit by one request a stream.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace svdserve {

struct StreamBudgetSample {
  uint64_t computing = 0;
  uint64_t max_computing = 0;
  uint64_t waiting_streams = 0;  // stopped reading until one of their own answers is written
};

class StreamBudget {
 public:
  explicit StreamBudget(uint64_t max_computing) noexcept : max_computing_(max_computing) {}
  StreamBudget(const StreamBudget&) = delete;
  StreamBudget& operator=(const StreamBudget&) = delete;

  // Whether a stream that already holds answers may read another request. Relaxed: a stale
  // value only moves the limit by the overshoot the header allows.
  [[nodiscard]] bool has_room() const noexcept {
    return computing_.load(std::memory_order_relaxed) < max_computing_;
  }

  // A request goes into the pipeline, then is computed (or failed).
  void read() noexcept { change(computing_, 1); }
  void computed() noexcept { change(computing_, -1); }
  // A stream stops reading requests (it holds its limit, or the budget is spent), and reads again.
  void stopped_reading() noexcept { change(waiting_streams_, 1); }
  void reading_again() noexcept { change(waiting_streams_, -1); }

  [[nodiscard]] StreamBudgetSample sample() const noexcept {
    return {computing_.load(std::memory_order_relaxed), max_computing_,
            waiting_streams_.load(std::memory_order_relaxed)};
  }

  // Waits until `reached(sample())` holds, at most `timeout`; returns whether it did. For
  // observers (tests, shutdown logs): the streams themselves never wait on the budget.
  [[nodiscard]] bool wait_until(const std::function<bool(const StreamBudgetSample&)>& reached,
                                std::chrono::milliseconds timeout) const;

 private:
  // Every change wakes the observers waiting in wait_until, if there are any: the fences make
  // either the observer see the change or this see the observer (no lost wake-up), and the
  // streams pay one load when nobody watches.
  void change(std::atomic<uint64_t>& value, uint64_t delta) noexcept {
    value.fetch_add(delta, std::memory_order_relaxed);  // unsigned: a "negative" delta wraps
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (observers_.load(std::memory_order_relaxed) == 0) return;
    { std::lock_guard lock(observers_mutex_); }  // an observer between its check and its wait
    changed_.notify_all();
  }

  const uint64_t max_computing_;
  std::atomic<uint64_t> computing_{0};
  std::atomic<uint64_t> waiting_streams_{0};

  mutable std::atomic<uint64_t> observers_{0};
  mutable std::mutex observers_mutex_;  // with changed_: wait_until's sleep
  mutable std::condition_variable changed_;
};

}  // namespace svdserve
