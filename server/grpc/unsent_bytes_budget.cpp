#include "server/grpc/unsent_bytes_budget.hpp"

#include <algorithm>

namespace svdserve {

void UnsentBytesBudget::Reservation::shrink_to(uint64_t bytes) noexcept {
  if (budget_ == nullptr || bytes >= bytes_) return;
  const uint64_t freed = bytes_ - bytes;
  bytes_ = bytes;
  budget_->release(freed);
}

bool UnsentBytesBudget::fits_locked(uint64_t bytes) const noexcept {
  return held_bytes_ == 0 || (bytes <= budget_bytes_ && held_bytes_ <= budget_bytes_ - bytes);
}

std::variant<UnsentBytesBudget::Reservation, UnsentBytesBudget::Ticket> UnsentBytesBudget::reserve(
    uint64_t bytes, Granted granted) {
  std::lock_guard lock(mutex_);
  if (waiting_.empty() && fits_locked(bytes)) {
    held_bytes_ += bytes;
    changed_.notify_all();
    return Reservation(this, bytes);
  }
  const Ticket ticket = next_ticket_++;
  waiting_.push_back({ticket, bytes, std::move(granted)});
  changed_.notify_all();
  return ticket;
}

bool UnsentBytesBudget::withdraw(Ticket ticket) {
  std::deque<Grant> grants;
  {
    std::lock_guard lock(mutex_);
    const auto it = std::find_if(waiting_.begin(), waiting_.end(),
                                 [ticket](const Waiter& w) { return w.ticket == ticket; });
    if (it == waiting_.end()) return false;
    waiting_.erase(it);
    grant_locked(grants);  // the calls behind it may fit now
    changed_.notify_all();
  }
  run(std::move(grants));
  return true;
}

void UnsentBytesBudget::release(uint64_t bytes) noexcept {
  std::deque<Grant> grants;
  {
    std::lock_guard lock(mutex_);
    held_bytes_ -= bytes;
    grant_locked(grants);
    changed_.notify_all();
  }
  run(std::move(grants));
}

void UnsentBytesBudget::grant_locked(std::deque<Grant>& grants) {
  // Strictly in order: a large answer at the head is not overtaken for ever by small ones.
  while (!waiting_.empty() && fits_locked(waiting_.front().bytes)) {
    Waiter& next = waiting_.front();
    held_bytes_ += next.bytes;
    grants.push_back({std::move(next.granted), Reservation(this, next.bytes)});
    waiting_.pop_front();
  }
}

void UnsentBytesBudget::run(std::deque<Grant> grants) noexcept {
  // A granted call may give bytes back at once (its job refused), which grants more: those run
  // in this loop rather than deeper in the stack, so a long line cannot overflow it.
  thread_local std::deque<Grant>* running = nullptr;
  if (running != nullptr) {
    for (Grant& grant : grants) running->push_back(std::move(grant));
    return;
  }
  running = &grants;
  while (!grants.empty()) {
    Grant grant = std::move(grants.front());
    grants.pop_front();
    grant.granted(std::move(grant.reservation));
  }
  running = nullptr;
}

UnsentBytesSample UnsentBytesBudget::sample() const {
  std::lock_guard lock(mutex_);
  return {held_bytes_, budget_bytes_, waiting_.size()};
}

bool UnsentBytesBudget::wait_until(const std::function<bool(const UnsentBytesSample&)>& reached,
                                   std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    return reached({held_bytes_, budget_bytes_, waiting_.size()});
  });
}

}  // namespace svdserve
