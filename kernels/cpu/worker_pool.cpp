#include "kernels/cpu/worker_pool.hpp"

#include <algorithm>
#include <string>

#include "kernels/trace.hpp"

namespace svdserve {

WorkerPool::WorkerPool(unsigned workers) {
  workers = std::max(1U, workers);  // with no thread, run() would wait forever
  threads_.reserve(workers);
  for (unsigned worker = 0; worker < workers; ++worker) {
    threads_.emplace_back([this, worker](const std::stop_token& stop) { work(stop, worker); });
  }
}

WorkerPool::~WorkerPool() {
  for (auto& thread : threads_) thread.request_stop();
  work_available_.notify_all();
  // std::jthread joins on destruction.
}

void WorkerPool::run(std::size_t count, const Task& task) {
  if (count == 0) return;
  Job job;
  job.task = &task;
  job.count = count;
  job.unfinished = count;
  std::unique_lock lock(mutex_);
  jobs_.push_back(&job);
  work_available_.notify_all();
  job.finished.wait(lock, [&] { return job.unfinished == 0; });
  if (job.failure) std::rethrow_exception(job.failure);
}

void WorkerPool::work(const std::stop_token& stop, unsigned worker) {
  trace::name_current_thread(("svd-cpu-" + std::to_string(worker)).c_str());
  std::unique_lock lock(mutex_);
  while (true) {
    // Returns false only when stop was requested and nothing is queued: drain, then exit.
    if (!work_available_.wait(lock, stop, [&] { return !jobs_.empty(); })) return;
    Job& job = *jobs_.front();
    const std::size_t index = job.next_index++;
    if (job.next_index == job.count) jobs_.pop_front();

    lock.unlock();
    std::exception_ptr failure;
    try {
      (*job.task)(index, worker);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();

    if (failure && (!job.failure || index < job.failed_index)) {
      job.failure = failure;
      job.failed_index = index;
    }
    if (--job.unfinished == 0) job.finished.notify_one();
  }
}

}  // namespace svdserve
