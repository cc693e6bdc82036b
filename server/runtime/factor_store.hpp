#pragma once
// Resident factors keyed by image id, within a byte budget and a cap on the number of images.
// When an insert does not fit, the store either evicts least recently used images or rejects the
// insert (config). Evicted ids are remembered (bounded) so GetImage/ListImages can say "evicted"
// rather than "never existed". Where a repository keeps the factors (factor_cache.hpp), the store
// is its cache: images the repository holds are marked stored, and stay listed (without a bound:
// the repository bounds them) after they leave memory.

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/factors.hpp"

namespace svdserve {

enum class FullStoreAction { evict_lru, reject };

// What an image holds in host memory besides its factors' bytes: its entry (the map node, the
// recency list node, the shared_ptr's control block, the factors object and its small vectors,
// and the allocator's headers around them) and its id, kept twice (the map's key and the info).
// Measured on the CPU backend: each one-pixel RGB image with a 256-byte id adds 2,200-2,270
// bytes of RSS (20,000 to 80,000 images), of which 36 are factors and 2 x 272 the id's copies.
struct EntryCost {
  std::size_t bytes = 1792;
  std::size_t bytes_per_id_byte = 2;
};

struct FactorStoreLimits {
  std::size_t budget_bytes = 0;  // factors and entries (EntryCost)
  // Per device of a multi-device backend (Factors::device()), each evicting its own least
  // recently used images; empty: one device with all of budget_bytes.
  std::vector<std::size_t> device_budget_bytes;
  FullStoreAction when_full = FullStoreAction::evict_lru;
  std::size_t evicted_history = 1024;
  std::size_t max_images = 1'000'000;
  EntryCost entry_cost;
};

struct StoredImageInfo {
  std::string id;
  ImageShape shape;
  uint32_t rank_kept = 0;
  std::size_t bytes = 0;  // what the budget counts: the factors and the entry
  bool resident = true;
  bool stored = false;  // the repository holds the factors: reloaded when used
  std::size_t device = 0;  // Factors::device() while resident
  bool lost_with_device = false;  // dropped when its device failed (drop_device)
  int64_t created_unix_ms = 0;
  int64_t last_used_unix_ms = 0;
};

// What one device holds.
struct DeviceUsage {
  std::size_t images = 0;
  std::size_t bytes = 0;
  std::size_t budget_bytes = 0;
  bool dropped = false;  // drop_device: the device failed, and takes no images any more
};

// One page of images in id order; next_after is the last id when more follow, else empty.
struct StoredImagePage {
  std::vector<StoredImageInfo> images;
  std::string next_after;
};

class FactorStore {
 public:
  explicit FactorStore(FactorStoreLimits limits);

  // The bytes the budget counts for `factors` stored under `id`.
  [[nodiscard]] std::size_t counted_bytes(std::string_view id, const Factors& factors) const noexcept;

  // Stores factors under id, replacing an image of the same id. Returns the ids evicted to make
  // room. Throws ResourceExhausted when the image is larger than the whole budget, or when it
  // does not fit (in bytes or in max_images) and the policy is reject.
  std::vector<std::string> insert(const std::string& id, std::shared_ptr<const Factors> factors);

  // The factors of a resident image; marks it most recently used. Throws NotFound (saying so
  // when the image was evicted).
  [[nodiscard]] std::shared_ptr<const Factors> find(const std::string& id);

  // Resident or remembered-evicted image; nullopt when unknown. Does not touch recency.
  [[nodiscard]] std::optional<StoredImageInfo> info(const std::string& id) const;
  [[nodiscard]] std::shared_ptr<const Factors> peek(const std::string& id) const;

  // Resident images, most recently used first; then evicted ones when asked; then stored ones. All of them: for
  // tests and small stores; ListImages pages with list_page.
  [[nodiscard]] std::vector<StoredImageInfo> list(bool include_evicted) const;
  // At most `limit` images (resident, and evicted ones when asked) whose ids start with
  // `prefix` and come after `after`, in id order: a stable place to go on from while images
  // come and go. Ids with one prefix are contiguous in that order, so a namespace's page costs
  // what its own images cost.
  [[nodiscard]] StoredImagePage list_page(std::string_view after, std::size_t limit,
                                          bool include_evicted,
                                          std::string_view prefix = {}) const;

  // Marks an image the repository now holds, `written` being the factors that were written: a
  // resident image only when they are still its factors (not a newer Decompose of the id).
  // False when the id is not known at all (deleted, or past the evicted history).
  bool mark_stored(const std::string& id, const Factors* written);
  // Makes factors loaded from the repository resident (marked stored) unless the id is resident
  // already (a newer Decompose, or another load): returns the resident factors either way.
  std::shared_ptr<const Factors> insert_loaded(const std::string& id,
                                               std::shared_ptr<const Factors> factors);
  // Lists an image the repository holds but memory does not (the index at start); a resident
  // image is marked stored.
  void remember_stored(StoredImageInfo info);

  // Frees a resident image (or forgets an evicted one); returns bytes freed. Throws NotFound.
  std::size_t erase(const std::string& id);

  // Lets go of every resident image on `device` (a failed one): they are listed as evicted, and
  // those the repository holds reload onto another device when used. Returns how many. Inserts
  // onto the device are refused (Unavailable) from then on.
  std::size_t drop_device(std::size_t device);

  [[nodiscard]] std::vector<DeviceUsage> device_usage() const;  // by Factors::device()
  [[nodiscard]] std::size_t bytes_resident() const;
  [[nodiscard]] std::size_t images_resident() const;
  [[nodiscard]] uint64_t evictions() const;
  [[nodiscard]] std::size_t budget_bytes() const noexcept { return limits_.budget_bytes; }
  [[nodiscard]] std::size_t max_images() const noexcept { return limits_.max_images; }

 private:
  struct Entry {
    StoredImageInfo info;
    std::shared_ptr<const Factors> factors;
    std::list<const std::string*>::iterator recency;  // position in recency_
  };

  [[nodiscard]] std::size_t device_budget(std::size_t device) const;
  // The device of `factors`, checked against the budgets.
  [[nodiscard]] std::size_t device_of(const Factors& factors) const;
  void check_fits_budget(const std::string& id, std::size_t bytes, std::size_t device) const;
  // insert() with mutex_ held and the bytes counted; `stored` marks it as the repository's.
  std::vector<std::string> insert_locked(const std::string& id,
                                         std::shared_ptr<const Factors> factors,
                                         std::size_t bytes, bool stored);
  // Removes a resident entry and its bytes (not remembered as evicted).
  void forget_resident_locked(std::map<std::string, Entry, std::less<>>::iterator it);
  // Evicts the image at `recency` (a position in recency_).
  void evict_locked(std::list<const std::string*>::iterator recency);
  // The least recently used image on `device`; recency_.end() when it has none.
  [[nodiscard]] std::list<const std::string*>::iterator least_recent_on_locked(std::size_t device);
  void remember_evicted_locked(StoredImageInfo info);

  const FactorStoreLimits limits_;

  mutable std::mutex mutex_;
  // Ordered by id, so that a page of ListImages goes on from the last id of the one before.
  std::map<std::string, Entry, std::less<>> resident_;                // guarded by mutex_
  std::list<const std::string*> recency_;  // guarded by mutex_; keys of resident_, front = newest
  std::map<std::string, StoredImageInfo, std::less<>> evicted_;      // guarded by mutex_
  // guarded by mutex_; front = newest; the ids of evicted_ that are not stored (those are bounded
  // by evicted_history, stored ones by the repository)
  std::list<std::string> evicted_order_;
  std::size_t bytes_resident_ = 0;         // guarded by mutex_
  std::vector<DeviceUsage> devices_;       // guarded by mutex_; by Factors::device()
  uint64_t evictions_ = 0;                 // guarded by mutex_
};

}  // namespace svdserve
