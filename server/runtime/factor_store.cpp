#include "server/runtime/factor_store.hpp"

#include <algorithm>
#include <chrono>

#include "kernels/errors.hpp"
#include "server/runtime/unix_time.hpp"

namespace svdserve {
namespace {

std::string mib(std::size_t bytes) {
  return std::to_string(bytes / (1024 * 1024)) + " MiB";
}

std::string on_device(std::size_t device) {
  return " on device " + std::to_string(device);
}

// With budgets per device, the whole budget is their sum.
FactorStoreLimits with_devices(FactorStoreLimits limits) {
  if (limits.device_budget_bytes.empty()) {
    limits.device_budget_bytes.push_back(limits.budget_bytes);
  } else {
    limits.budget_bytes = 0;
    for (std::size_t bytes : limits.device_budget_bytes) limits.budget_bytes += bytes;
  }
  return limits;
}

}  // namespace

FactorStore::FactorStore(FactorStoreLimits limits) : limits_(with_devices(std::move(limits))) {
  for (std::size_t budget : limits_.device_budget_bytes) {
    devices_.push_back(DeviceUsage{.images = 0, .bytes = 0, .budget_bytes = budget});
  }
}

std::size_t FactorStore::device_budget(std::size_t device) const {
  return limits_.device_budget_bytes[device];
}

std::size_t FactorStore::device_of(const Factors& factors) const {
  const std::size_t device = factors.device();
  if (device >= limits_.device_budget_bytes.size()) {
    throw InternalError("factors on device " + std::to_string(device) + " of a store with " +
                        std::to_string(limits_.device_budget_bytes.size()) + " devices");
  }
  return device;
}

std::size_t FactorStore::counted_bytes(std::string_view id, const Factors& factors) const noexcept {
  return factors.bytes_resident() + limits_.entry_cost.bytes +
         limits_.entry_cost.bytes_per_id_byte * id.size();
}

void FactorStore::check_fits_budget(const std::string& id, std::size_t bytes,
                                    std::size_t device) const {
  if (bytes > device_budget(device)) {
    throw ResourceExhausted("image '" + id + "' needs " + std::to_string(bytes) +
                            " bytes (factors and entry), more than the whole memory budget of " +
                            std::to_string(device_budget(device)) +
                            " bytes; ask for a smaller max_rank or raise memory_budget_bytes");
  }
}

std::vector<std::string> FactorStore::insert(const std::string& id,
                                             std::shared_ptr<const Factors> factors) {
  const std::size_t bytes = counted_bytes(id, *factors);
  check_fits_budget(id, bytes, device_of(*factors));
  std::lock_guard lock(mutex_);
  return insert_locked(id, std::move(factors), bytes, false);
}

std::shared_ptr<const Factors> FactorStore::insert_loaded(const std::string& id,
                                                          std::shared_ptr<const Factors> factors) {
  const std::size_t bytes = counted_bytes(id, *factors);
  check_fits_budget(id, bytes, device_of(*factors));
  std::lock_guard lock(mutex_);
  if (auto it = resident_.find(id); it != resident_.end()) return it->second.factors;
  (void)insert_locked(id, factors, bytes, true);
  return factors;
}

std::vector<std::string> FactorStore::insert_locked(const std::string& id,
                                                    std::shared_ptr<const Factors> factors,
                                                    std::size_t bytes, bool stored) {
  const std::size_t device = factors->device();
  DeviceUsage& usage = devices_[device];
  if (usage.dropped) {
    // Made on the device before it failed, arriving after drop_device: it would never be used.
    throw Unavailable("the device of image '" + id + "' failed while it was made; retry");
  }
  std::vector<std::string> evicted_ids;
  // Replacing an id frees the old factors first.
  const auto existing = resident_.find(id);
  const bool replaces = existing != resident_.end();
  const std::size_t replaced_bytes =
      replaces && existing->second.info.device == device ? existing->second.info.bytes : 0;
  if (limits_.when_full == FullStoreAction::reject) {
    if (usage.bytes - replaced_bytes + bytes > usage.budget_bytes) {
      throw ResourceExhausted("memory budget full: " + mib(usage.bytes) + " of " +
                              mib(usage.budget_bytes) + " used" + (devices_.size() > 1 ? on_device(device) : "") +
                              ", image '" + id + "' needs " + std::to_string(bytes) +
                              " bytes; delete images or raise memory_budget_bytes");
    }
    if (!replaces && resident_.size() >= limits_.max_images) {
      throw ResourceExhausted("the store holds max_images (" +
                              std::to_string(limits_.max_images) + ") images; delete images "
                              "or raise max_images");
    }
  }
  if (replaces) {
    forget_resident_locked(existing);
  }
  // The device's own least recently used images make room on it; max_images, any device's.
  while (usage.bytes + bytes > usage.budget_bytes) {
    const auto victim = least_recent_on_locked(device);
    if (victim == recency_.end()) break;
    evicted_ids.push_back(**victim);
    evict_locked(victim);
    ++evictions_;
  }
  while (!recency_.empty() && resident_.size() >= limits_.max_images) {
    evicted_ids.push_back(*recency_.back());
    evict_locked(std::prev(recency_.end()));
    ++evictions_;
  }
  if (const auto it = evicted_.find(id); it != evicted_.end()) {
    if (!it->second.stored) evicted_order_.remove(id);
    evicted_.erase(it);
  }

  const int64_t now = now_unix_ms();
  StoredImageInfo info{.id = id,
                       .shape = factors->shape(),
                       .rank_kept = factors->rank_kept(),
                       .bytes = bytes,
                       .resident = true,
                       .stored = stored,
                       .device = device,
                       .created_unix_ms = now,
                       .last_used_unix_ms = now};
  const auto [it, inserted] = resident_.emplace(id, Entry{std::move(info), std::move(factors), {}});
  recency_.push_front(&it->first);
  it->second.recency = recency_.begin();
  bytes_resident_ += bytes;
  usage.bytes += bytes;
  ++usage.images;
  return evicted_ids;
}

std::shared_ptr<const Factors> FactorStore::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = resident_.find(id);
  if (it == resident_.end()) {
    if (const auto evicted = evicted_.find(id); evicted != evicted_.end()) {
      if (evicted->second.lost_with_device) {
        throw NotFound("image '" + id + "' was on a device that failed, and no repository "
                       "holds it; decompose it again");
      }
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
  for (const std::string* id : recency_) out.push_back(resident_.find(*id)->second.info);
  if (include_evicted) {
    for (const auto& id : evicted_order_) out.push_back(evicted_.at(id));
  }
  for (const auto& [id, info] : evicted_) {
    if (info.stored) out.push_back(info);
  }
  return out;
}

StoredImagePage FactorStore::list_page(std::string_view after, std::size_t limit,
                                       bool include_evicted, std::string_view prefix) const {
  std::lock_guard lock(mutex_);
  StoredImagePage page;
  // The first id of the prefix, or the first after `after`.
  const auto start = [&](const auto& map) {
    return after < prefix ? map.lower_bound(prefix) : map.upper_bound(after);
  };
  const auto in_range = [&](const auto& it, const auto& map) {
    return it != map.end() && std::string_view(it->first).starts_with(prefix);
  };
  // The two maps merged in id order (an id is in at most one of them).
  auto resident = start(resident_);
  // Stored images are listed always: they are one use away from resident.
  const auto listed = [&](auto it) {
    while (in_range(it, evicted_) && !include_evicted && !it->second.stored) ++it;
    return it;
  };
  auto evicted = listed(start(evicted_));
  while (in_range(resident, resident_) || in_range(evicted, evicted_)) {
    if (page.images.size() == limit) {
      page.next_after = page.images.back().id;
      break;
    }
    if (!in_range(evicted, evicted_) ||
        (in_range(resident, resident_) && resident->first < evicted->first)) {
      page.images.push_back((resident++)->second.info);
    } else {
      page.images.push_back(evicted->second);
      evicted = listed(std::next(evicted));
    }
  }
  return page;
}

std::size_t FactorStore::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (auto it = resident_.find(id); it != resident_.end()) {
    const std::size_t bytes = it->second.info.bytes;
    forget_resident_locked(it);
    return bytes;
  }
  if (const auto it = evicted_.find(id); it != evicted_.end()) {
    if (!it->second.stored) evicted_order_.remove(id);
    evicted_.erase(it);
    return 0;
  }
  throw NotFound("no image with id '" + id + "'");
}

std::size_t FactorStore::drop_device(std::size_t device) {
  // Let go of after the lock: freeing memory of a failed device is slow and may log.
  std::vector<std::shared_ptr<const Factors>> released;
  std::lock_guard lock(mutex_);
  if (device >= devices_.size()) return 0;
  devices_[device].dropped = true;
  std::vector<std::list<const std::string*>::iterator> victims;
  for (auto it = recency_.begin(); it != recency_.end(); ++it) {
    Entry& entry = resident_.find(**it)->second;
    if (entry.info.device != device) continue;
    entry.info.lost_with_device = true;
    victims.push_back(it);
    released.push_back(entry.factors);
  }
  for (auto it = victims.rbegin(); it != victims.rend(); ++it) evict_locked(*it);  // oldest first
  return victims.size();
}

std::vector<DeviceUsage> FactorStore::device_usage() const {
  std::lock_guard lock(mutex_);
  return devices_;
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

void FactorStore::forget_resident_locked(std::map<std::string, Entry, std::less<>>::iterator it) {
  DeviceUsage& usage = devices_[it->second.info.device];
  usage.bytes -= it->second.info.bytes;
  --usage.images;
  bytes_resident_ -= it->second.info.bytes;
  recency_.erase(it->second.recency);
  resident_.erase(it);
}

std::list<const std::string*>::iterator FactorStore::least_recent_on_locked(std::size_t device) {
  for (auto it = recency_.rbegin(); it != recency_.rend(); ++it) {
    if (resident_.find(**it)->second.info.device == device) return std::prev(it.base());
  }
  return recency_.end();
}

void FactorStore::evict_locked(std::list<const std::string*>::iterator recency) {
  auto it = resident_.find(**recency);
  StoredImageInfo info = it->second.info;
  forget_resident_locked(it);
  info.resident = false;
  info.bytes = 0;
  remember_evicted_locked(std::move(info));
}

bool FactorStore::mark_stored(const std::string& id, const Factors* written) {
  std::lock_guard lock(mutex_);
  if (auto resident = resident_.find(id); resident != resident_.end()) {
    if (resident->second.factors.get() == written) resident->second.info.stored = true;
    return true;
  }
  if (auto evicted = evicted_.find(id); evicted != evicted_.end()) {
    if (!evicted->second.stored) evicted_order_.remove(id);
    evicted->second.stored = true;
    return true;
  }
  return false;
}

void FactorStore::remember_stored(StoredImageInfo info) {
  std::lock_guard lock(mutex_);
  if (auto it = resident_.find(info.id); it != resident_.end()) {
    it->second.info.stored = true;
    return;
  }
  info.resident = false;
  info.stored = true;
  info.bytes = 0;
  if (auto it = evicted_.find(info.id); it != evicted_.end() && !it->second.stored) {
    evicted_order_.remove(info.id);
  }
  const std::string id = info.id;
  evicted_.insert_or_assign(id, std::move(info));
}

void FactorStore::remember_evicted_locked(StoredImageInfo info) {
  if (info.stored) {
    const std::string id = info.id;
    evicted_.insert_or_assign(id, std::move(info));
    return;
  }
  if (limits_.evicted_history == 0) return;
  const std::string id = info.id;
  evicted_.insert_or_assign(id, std::move(info));
  evicted_order_.remove(id);
  evicted_order_.push_front(id);
  while (evicted_order_.size() > limits_.evicted_history) {
    evicted_.erase(evicted_order_.back());
    evicted_order_.pop_back();
  }
}

}  // namespace svdserve
