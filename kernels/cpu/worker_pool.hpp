#pragma once
// A fixed set of threads that runs the indexed tasks of a parallel-for. Several callers may run
// at once: their jobs queue in arrival order, and the pool's size bounds how many tasks run
// together whoever submitted them, which is what keeps the CPU backend at `threads` cores.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace svdserve {

class WorkerPool {
 public:
  // task(index, worker): worker is in 0..size()-1 and names the thread, for per-worker scratch.
  using Task = std::function<void(std::size_t index, unsigned worker)>;

  explicit WorkerPool(unsigned workers);  // at least one
  // Runs what is queued, then joins. No run() may be in progress.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  [[nodiscard]] unsigned size() const noexcept { return static_cast<unsigned>(threads_.size()); }

  // Runs task for every index in 0..count-1 and returns when all have finished. If tasks throw,
  // rethrows the exception of the lowest index after the others have finished.
  void run(std::size_t count, const Task& task);

 private:
  struct Job {
    const Task* task = nullptr;
    std::size_t count = 0;
    std::size_t next_index = 0;    // guarded by mutex_
    std::size_t unfinished = 0;    // guarded by mutex_
    std::size_t failed_index = 0;  // guarded by mutex_
    std::exception_ptr failure;    // guarded by mutex_
    std::condition_variable finished;
  };

  void work(const std::stop_token& stop, unsigned worker);

  std::mutex mutex_;
  std::condition_variable_any work_available_;
  std::deque<Job*> jobs_;  // guarded by mutex_; jobs with indices not yet handed out
  // Last, so the threads stop and join before the queue and mutex they use are destroyed.
  std::vector<std::jthread> threads_;
};

}  // namespace svdserve
