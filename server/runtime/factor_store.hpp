#pragma once
// Resident factors keyed by image id, within a byte budget. When an insert does not fit, the
// store either evicts least recently used images or rejects the insert (config). Evicted ids are
// remembered (bounded) so GetImage/ListImages can say "evicted" rather than "never existed".

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/factors.hpp"

namespace svdserve {

enum class FullStoreAction { evict_lru, reject };

struct StoredImageInfo {
  std::string id;
  ImageShape shape;
  uint32_t rank_kept = 0;
  std::size_t bytes = 0;
  bool resident = true;
  int64_t created_unix_ms = 0;
  int64_t last_used_unix_ms = 0;
};

class FactorStore {
 public:
  FactorStore(std::size_t budget_bytes, FullStoreAction when_full, std::size_t evicted_history);

  // Stores factors under id, replacing an image of the same id. Returns the ids evicted to make
  // room. Throws ResourceExhausted when the image is larger than the whole budget, or when it
  // does not fit and the policy is reject.
  std::vector<std::string> insert(const std::string& id, std::shared_ptr<const Factors> factors);

  // The factors of a resident image; marks it most recently used. Throws NotFound (saying so
  // when the image was evicted).
  [[nodiscard]] std::shared_ptr<const Factors> find(const std::string& id);

  // Resident or remembered-evicted image; nullopt when unknown. Does not touch recency.
  [[nodiscard]] std::optional<StoredImageInfo> info(const std::string& id) const;
  [[nodiscard]] std::shared_ptr<const Factors> peek(const std::string& id) const;

  // Resident images, most recently used first; then evicted ones when asked.
  [[nodiscard]] std::vector<StoredImageInfo> list(bool include_evicted) const;

  // Frees a resident image (or forgets an evicted one); returns bytes freed. Throws NotFound.
  std::size_t erase(const std::string& id);

  [[nodiscard]] std::size_t bytes_resident() const;
  [[nodiscard]] std::size_t images_resident() const;
  [[nodiscard]] uint64_t evictions() const;
  [[nodiscard]] std::size_t budget_bytes() const noexcept { return budget_bytes_; }

 private:
  struct Entry {
    StoredImageInfo info;
    std::shared_ptr<const Factors> factors;
    std::list<std::string>::iterator recency;  // position in recency_
  };

  void evict_one_locked();
  void remember_evicted_locked(StoredImageInfo info);

  const std::size_t budget_bytes_;
  const FullStoreAction when_full_;
  const std::size_t evicted_history_;

  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> resident_;         // guarded by mutex_
  std::list<std::string> recency_;                          // guarded by mutex_; front = newest
  std::unordered_map<std::string, StoredImageInfo> evicted_;  // guarded by mutex_
  std::list<std::string> evicted_order_;                    // guarded by mutex_; front = newest
  std::size_t bytes_resident_ = 0;                          // guarded by mutex_
  uint64_t evictions_ = 0;                                  // guarded by mutex_
};

}  // namespace svdserve
