#pragma once
// A bounded, closeable multi-producer multi-consumer queue. The closed flag lives under the same
// mutex as the items, so a push can never slip in after close() and be lost.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace svdserve {

enum class PushResult { ok, full, closed };

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity) {}

  // Never waits.
  [[nodiscard]] PushResult try_push(T& item) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return PushResult::closed;
      if (items_.size() >= capacity_) return PushResult::full;
      items_.push_back(std::move(item));
    }
    not_empty_.notify_one();
    return PushResult::ok;
  }

  // Waits for room until the deadline. On failure `item` is left untouched.
  template <typename Clock, typename Duration>
  [[nodiscard]] PushResult push_until(T& item, std::chrono::time_point<Clock, Duration> deadline) {
    {
      std::unique_lock lock(mutex_);
      auto has_room = [&] { return closed_ || items_.size() < capacity_; };
      bool room = true;
      // wait_until(max()) can overflow inside the library; wait without a limit instead.
      if (deadline == decltype(deadline)::max()) {
        not_full_.wait(lock, has_room);
      } else {
        room = not_full_.wait_until(lock, deadline, has_room);
      }
      if (closed_) return PushResult::closed;
      if (!room) return PushResult::full;
      items_.push_back(std::move(item));
    }
    not_empty_.notify_one();
    return PushResult::ok;
  }

  // Waits for room with no time limit (used between pipeline stages: an accepted job is never
  // dropped; back-pressure travels upstream to the admission queue instead).
  [[nodiscard]] PushResult push(T& item) {
    return push_until(item, std::chrono::steady_clock::time_point::max());
  }

  // Waits for an item; nullopt once the queue is closed and empty.
  [[nodiscard]] std::optional<T> pop() {
    return pop_until(std::chrono::steady_clock::time_point::max());
  }

  // As pop(), but also returns nullopt when the deadline passes first.
  template <typename Clock, typename Duration>
  [[nodiscard]] std::optional<T> pop_until(std::chrono::time_point<Clock, Duration> deadline) {
    std::optional<T> item;
    {
      std::unique_lock lock(mutex_);
      auto ready = [&] { return closed_ || !items_.empty(); };
      if (deadline == decltype(deadline)::max()) {
        not_empty_.wait(lock, ready);
      } else {
        not_empty_.wait_until(lock, deadline, ready);
      }
      if (items_.empty()) return std::nullopt;
      item.emplace(std::move(items_.front()));
      items_.pop_front();
    }
    not_full_.notify_one();
    return item;
  }

  // Rejects further pushes; consumers still drain what is queued.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  // Closed and empty: consumers can stop.
  [[nodiscard]] bool drained() const {
    std::lock_guard lock(mutex_);
    return closed_ && items_.empty();
  }

  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<T> items_;  // guarded by mutex_
  bool closed_ = false;  // guarded by mutex_
};

}  // namespace svdserve
