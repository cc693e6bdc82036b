#include "server/runtime/dynamic_batcher.hpp"

#include <algorithm>

#include "kernels/trace.hpp"

namespace svdserve {

BatchKey batch_key(const Job& job) noexcept {
  switch (job.kind) {
    case JobKind::decompose:
      return {job.kind, job.image.shape, job.max_rank, 0};
    case JobKind::compress:
      return {job.kind, job.image.shape, 0, 0};
    case JobKind::reconstruct:
      return {job.kind, job.factors->shape(), 0, job.factors->device()};
  }
  return {job.kind, {}, 0, 0};
}

DynamicBatcher::DynamicBatcher(BatcherOptions options, BoundedQueue<JobPtr>& input,
                               BoundedQueue<Batch>& output)
    : options_(options), input_(input), output_(output), thread_([this] { run(); }) {}

DynamicBatcher::~DynamicBatcher() = default;  // std::jthread joins

std::chrono::microseconds DynamicBatcher::queue_delay(JobKind kind) const noexcept {
  if (kind == JobKind::reconstruct) return options_.max_queue_delay;
  return std::max(options_.max_queue_delay, options_.decompose_queue_delay);
}

void DynamicBatcher::run() {
  trace::name_current_thread("svd-batcher");
  struct Pending {
    BatchKey key;
    Clock::time_point flush_at;
    Batch jobs;
  };
  // Few distinct shapes are pending at once, so a vector beats a map here.
  std::vector<Pending> pending;

  auto dispatch = [&](Pending& group) {
    trace::ScopedRange range("batch_dispatch");
    Batch batch = std::move(group.jobs);
    // A worker stage only refuses after shutdown has joined the batcher, so this cannot fail.
    (void)output_.push(batch);
  };

  for (;;) {
    Clock::time_point wake = Clock::time_point::max();
    for (const auto& group : pending) wake = std::min(wake, group.flush_at);
    std::optional<JobPtr> next = input_.pop_until(wake);

    if (next) {
      JobPtr job = std::move(*next);
      const BatchKey key = batch_key(*job);
      auto it = std::find_if(pending.begin(), pending.end(),
                             [&](const Pending& p) { return p.key == key; });
      if (it == pending.end()) {
        pending.push_back({key, Clock::now() + queue_delay(key.kind), {}});
        it = std::prev(pending.end());
      }
      it->jobs.push_back(std::move(job));
      if (it->jobs.size() >= options_.max_batch_size) {
        dispatch(*it);
        pending.erase(it);
      }
      continue;
    }

    // Timed out, or the input is closed: flush what is due (everything, when closed).
    const bool closed = input_.drained();
    const Clock::time_point now = Clock::now();
    for (auto it = pending.begin(); it != pending.end();) {
      if (closed || it->flush_at <= now) {
        dispatch(*it);
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
    if (closed) break;
  }
  output_.close();
}

}  // namespace svdserve
