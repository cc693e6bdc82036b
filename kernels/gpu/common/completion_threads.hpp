#pragma once
// The threads that finish GPU batches. A worker enqueues a batch on its stream, records the
// stream's completion event and posts a task here, then goes back for the next batch; the task
// waits for the event (a blocking sync: the thread sleeps, it does not spin), copies outputs out of
// pinned staging where needed, returns the stream to the pool and then runs the caller's
// completion (which may encode PNG and answers the gRPC calls). Two threads per stream, so that a
// finished batch seldom waits for a thread while others are still encoding their responses.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace svdserve::gpu {

class CompletionThreads {
 public:
  explicit CompletionThreads(unsigned count);
  // Runs every task already posted, then joins.
  ~CompletionThreads();
  CompletionThreads(const CompletionThreads&) = delete;
  CompletionThreads& operator=(const CompletionThreads&) = delete;

  // Tasks must not throw (they report their errors to their own caller).
  void post(std::function<void()> task);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;  // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::vector<std::jthread> threads_;        // last: joined before the queue goes
};

}  // namespace svdserve::gpu
