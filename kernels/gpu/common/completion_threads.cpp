#include "kernels/gpu/common/completion_threads.hpp"

#include "kernels/trace.hpp"

namespace svdserve::gpu {

CompletionThreads::CompletionThreads(unsigned count) {
  for (unsigned i = 0; i < count; ++i) threads_.emplace_back([this] { run(); });
}

CompletionThreads::~CompletionThreads() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  threads_.clear();  // joins after the queue is empty
}

void CompletionThreads::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  ready_.notify_one();
}

void CompletionThreads::run() {
  trace::name_current_thread("svd-gpu-completion");
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace svdserve::gpu
