#pragma once
// Groups compatible jobs (same kind, same image shape, for decompose the same max rank, for
// reconstruct the same device) into batches of at most max_batch_size, holding a partial batch at
// most max_queue_delay_us after its first job arrived (decompose and compress:
// decompose_queue_delay_us), as Triton does. One thread; it ends when its input is closed and
// drained, after flushing every partial batch, and then closes its output.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "server/runtime/bounded_queue.hpp"
#include "server/runtime/job.hpp"

namespace svdserve {

using Batch = std::vector<JobPtr>;

struct BatcherOptions {
  std::size_t max_batch_size = 16;
  std::chrono::microseconds max_queue_delay{100};
  // Decompose and compress batches wait the longer of this and max_queue_delay.
  std::chrono::microseconds decompose_queue_delay{0};
};

class DynamicBatcher {
 public:
  DynamicBatcher(BatcherOptions options, BoundedQueue<JobPtr>& input, BoundedQueue<Batch>& output);
  ~DynamicBatcher();  // joins; close the input first
  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

 private:
  void run();
  [[nodiscard]] std::chrono::microseconds queue_delay(JobKind kind) const noexcept;

  const BatcherOptions options_;
  BoundedQueue<JobPtr>& input_;
  BoundedQueue<Batch>& output_;
  std::jthread thread_;
};

// Jobs with equal keys may share a batch: a reconstruct batch is of one device's images.
struct BatchKey {
  JobKind kind;
  ImageShape shape;
  uint32_t max_rank;
  std::size_t device;
  friend bool operator==(const BatchKey&, const BatchKey&) = default;
};
[[nodiscard]] BatchKey batch_key(const Job& job) noexcept;

}  // namespace svdserve
