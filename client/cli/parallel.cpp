#include "client/cli/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace svdserve::cli {

void parallel_for(std::size_t count, std::size_t concurrency, const std::function<void(std::size_t)>& work) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr first_error;  // Guarded by error_mutex.

  const auto worker = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count) return;
      try {
        work(i);
      } catch (...) {
        const std::scoped_lock lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };

  const std::size_t threads = std::clamp<std::size_t>(concurrency, 1, std::max<std::size_t>(count, 1));
  {
    std::vector<std::jthread> pool;
    pool.reserve(threads - 1);
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();  // The calling thread is one of the workers.
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace svdserve::cli
