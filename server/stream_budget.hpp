#pragma once
// What all ReconstructStream calls together may hold: answers read and not yet written, by
// count and by pixel bytes. Each stream has its own limit as well (reconstruct_stream.cpp), but
// many streams together would still fill the compute queue (their items then fail with
// RESOURCE_EXHAUSTED) or the host buffer pool (answers spill to ordinary memory, whose
// device-to-host copies are slow: 64 streams of 4 items at 1024^2 gave 1,247 items/s on the H100
// without this budget, 2,326 with it; docs/PERFORMANCE.md). A stream that finds the budget spent stops reading requests, which is
// gRPC flow control for its client, until its own answers are written: no stream waits on
// another, and a stream with nothing unwritten always reads, so each one makes progress. The
// check and the take are not one step, so the streams together may pass the limits by at most
// one answer each.

#include <atomic>
#include <cstdint>

namespace svdserve {

struct StreamBudgetSample {
  uint64_t answers = 0;
  uint64_t bytes = 0;
  uint64_t max_answers = 0;
  uint64_t max_bytes = 0;
};

class StreamBudget {
 public:
  StreamBudget(uint64_t max_answers, uint64_t max_bytes) noexcept
      : max_answers_(max_answers), max_bytes_(max_bytes) {}
  StreamBudget(const StreamBudget&) = delete;
  StreamBudget& operator=(const StreamBudget&) = delete;

  // Whether a stream that already holds answers may read another request.
  [[nodiscard]] bool has_room() const noexcept {
    return answers_.load(std::memory_order_relaxed) < max_answers_ &&
           bytes_.load(std::memory_order_relaxed) < max_bytes_;
  }
  // A request was read; its answer's pixel bytes once they are known; the answer was written
  // or dropped (with the bytes added for it).
  void take() noexcept { answers_.fetch_add(1, std::memory_order_relaxed); }
  void add_bytes(uint64_t bytes) noexcept { bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  void give_back(uint64_t bytes) noexcept {
    answers_.fetch_sub(1, std::memory_order_relaxed);
    bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  }

  [[nodiscard]] uint64_t answers() const noexcept { return answers_.load(); }
  [[nodiscard]] uint64_t bytes() const noexcept { return bytes_.load(); }
  [[nodiscard]] uint64_t max_answers() const noexcept { return max_answers_; }
  [[nodiscard]] uint64_t max_bytes() const noexcept { return max_bytes_; }
  [[nodiscard]] StreamBudgetSample sample() const noexcept {
    return {answers(), bytes(), max_answers_, max_bytes_};
  }

 private:
  const uint64_t max_answers_;
  const uint64_t max_bytes_;
  std::atomic<uint64_t> answers_{0};
  std::atomic<uint64_t> bytes_{0};
};

}  // namespace svdserve
