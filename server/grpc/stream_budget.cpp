#include "server/grpc/stream_budget.hpp"

namespace svdserve {

bool StreamBudget::wait_until(const std::function<bool(const StreamBudgetSample&)>& reached,
                              std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  observers_.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  bool done = false;
  {
    std::unique_lock lock(observers_mutex_);
    done = changed_.wait_until(lock, deadline, [&] { return reached(sample()); });
  }
  observers_.fetch_sub(1, std::memory_order_relaxed);
  return done;
}

}  // namespace svdserve
