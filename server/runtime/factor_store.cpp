#include "server/runtime/factor_store.hpp"

#include <algorithm>
#include <chrono>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string mib(std::size_t bytes) {
  return std::to_string(bytes / (1024 * 1024)) + " MiB";
}

}  // namespace

FactorStore::FactorStore(std::size_t budget_bytes, FullStoreAction when_full,
                         std::size_t evicted_history)
    : budget_bytes_(budget_bytes), when_full_(when_full), evicted_history_(evicted_history) {}

std::vector<std::string> FactorStore::insert(const std::string& id,
                                             std::shared_ptr<const Factors> factors) {
  const std::size_t bytes = factors->bytes_resident();
  if (bytes > budget_bytes_) {
    throw ResourceExhausted("image '" + id + "' needs " + std::to_string(bytes) +
                            " bytes of factors, more than the whole memory budget of " +
                            std::to_string(budget_bytes_) +
                            " bytes; ask for a smaller max_rank or raise memory_budget_bytes");
  }
  std::vector<std::string> evicted_ids;
  std::lock_guard lock(mutex_);
  // Replacing an id frees the old factors first.
  std::size_t replaced_bytes = 0;
  if (auto it = resident_.find(id); it != resident_.end()) replaced_bytes = it->second.info.bytes;
  if (bytes_resident_ - replaced_bytes + bytes > budget_bytes_ &&
      when_full_ == FullStoreAction::reject) {
    throw ResourceExhausted("memory budget full: " + mib(bytes_resident_) + " of " +
                            mib(budget_bytes_) + " used, image '" + id + "' needs " +
                            std::to_string(bytes) + " bytes; delete images or raise "
                            "memory_budget_bytes");
  }
  if (auto it = resident_.find(id); it != resident_.end()) {
    bytes_resident_ -= it->second.info.bytes;
    recency_.erase(it->second.recency);
    resident_.erase(it);
  }
  while (bytes_resident_ + bytes > budget_bytes_) {
    evicted_ids.push_back(recency_.back());
    evict_one_locked();
  }
  evicted_.erase(id);
  evicted_order_.remove(id);

  const int64_t now = now_unix_ms();
  StoredImageInfo info{.id = id,
                       .shape = factors->shape(),
                       .rank_kept = factors->rank_kept(),
                       .bytes = bytes,
                       .resident = true,
                       .created_unix_ms = now,
                       .last_used_unix_ms = now};
  recency_.push_front(id);
  resident_.emplace(id, Entry{std::move(info), std::move(factors), recency_.begin()});
  bytes_resident_ += bytes;
  return evicted_ids;
}

std::shared_ptr<const Factors> FactorStore::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = resident_.find(id);
  if (it == resident_.end()) {
    if (evicted_.contains(id)) {
      throw NotFound("image '" + id +
                     "' was evicted to fit the memory budget; decompose it again");
    }
    throw NotFound("no image with id '" + id + "'; decompose it first (ListImages shows ids)");
  }
  recency_.splice(recency_.begin(), recency_, it->second.recency);
  it->second.info.last_used_unix_ms = now_unix_ms();
  return it->second.factors;
}

std::optional<StoredImageInfo> FactorStore::info(const std::string& id) const {
  std::lock_guard lock(mutex_);
  if (auto it = resident_.find(id); it != resident_.end()) return it->second.info;
  if (auto it = evicted_.find(id); it != evicted_.end()) return it->second;
  return std::nullopt;
}

std::shared_ptr<const Factors> FactorStore::peek(const std::string& id) const {
  std::lock_guard lock(mutex_);
  if (auto it = resident_.find(id); it != resident_.end()) return it->second.factors;
  return nullptr;
}

std::vector<StoredImageInfo> FactorStore::list(bool include_evicted) const {
  std::lock_guard lock(mutex_);
  std::vector<StoredImageInfo> out;
  out.reserve(resident_.size() + (include_evicted ? evicted_.size() : 0));
  for (const auto& id : recency_) out.push_back(resident_.at(id).info);
  if (include_evicted) {
    for (const auto& id : evicted_order_) out.push_back(evicted_.at(id));
  }
  return out;
}

std::size_t FactorStore::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (auto it = resident_.find(id); it != resident_.end()) {
    const std::size_t bytes = it->second.info.bytes;
    bytes_resident_ -= bytes;
    recency_.erase(it->second.recency);
    resident_.erase(it);
    return bytes;
  }
  if (evicted_.erase(id) > 0) {
    evicted_order_.remove(id);
    return 0;
  }
  throw NotFound("no image with id '" + id + "'");
}

std::size_t FactorStore::bytes_resident() const {
  std::lock_guard lock(mutex_);
  return bytes_resident_;
}

std::size_t FactorStore::images_resident() const {
  std::lock_guard lock(mutex_);
  return resident_.size();
}

uint64_t FactorStore::evictions() const {
  std::lock_guard lock(mutex_);
  return evictions_;
}

void FactorStore::evict_one_locked() {
  const std::string id = recency_.back();
  auto it = resident_.find(id);
  StoredImageInfo info = it->second.info;
  bytes_resident_ -= info.bytes;
  recency_.pop_back();
  resident_.erase(it);
  ++evictions_;
  info.resident = false;
  info.bytes = 0;
  remember_evicted_locked(std::move(info));
}

void FactorStore::remember_evicted_locked(StoredImageInfo info) {
  if (evicted_history_ == 0) return;
  const std::string id = info.id;
  evicted_.insert_or_assign(id, std::move(info));
  evicted_order_.remove(id);
  evicted_order_.push_front(id);
  while (evicted_order_.size() > evicted_history_) {
    evicted_.erase(evicted_order_.back());
    evicted_order_.pop_back();
  }
}

}  // namespace svdserve
