#pragma once
// The factor store as a cache of the repository (the model of KServe ModelMesh): the repository
// is the truth, memory holds what was used last. A Decompose is written through per the
// durability; an image not in memory is loaded from the repository when it is used (one load per
// id at a time, however many calls wait for it); a delete deletes both; at start the repository
// is indexed (headers only) and the most recently written images are loaded up to the budget.
// Without a repository (durability none) this is the store alone, as it always was.

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "server/repository/factor_codec.hpp"
#include "server/repository/factor_repository.hpp"
#include "server/repository/repository_writer.hpp"
#include "server/runtime/factor_store.hpp"

namespace svdserve {

enum class Durability { sync, async, none };

struct FactorCacheOptions {
  Durability durability = Durability::sync;
  unsigned writer_threads = 16;
  std::size_t write_queue_capacity = 256;
};

// Totals since start, for /metrics and GetStats.
struct RepositoryCounters {
  uint64_t hits = 0;           // found in memory
  uint64_t misses = 0;         // not in memory: looked up in the repository
  uint64_t loads = 0;          // misses the repository answered with factors
  uint64_t load_failures = 0;  // unreachable, corrupt, or no memory for them
  uint64_t corrupt_entries = 0;
  uint64_t writes = 0;
  uint64_t write_failures = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  double load_seconds = 0.0;   // summed over loads
  std::size_t writes_queued = 0;
};

// What opening the repository found.
struct RepositoryIndex {
  std::size_t images = 0;   // intact headers, listed as stored
  std::size_t skipped = 0;  // unreadable or corrupt, logged
  std::size_t loaded = 0;   // made resident, most recently written first
};

class FactorCache {
 public:
  // store and backend must outlive the cache; repository is null exactly when durability is none.
  FactorCache(FactorStore& store, Backend& backend, std::unique_ptr<FactorRepository> repository,
              FactorCacheOptions options);
  ~FactorCache();  // close()

  [[nodiscard]] bool has_repository() const noexcept { return repository_ != nullptr; }
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] Durability durability() const noexcept { return options_.durability; }

  // Indexes the repository and warms memory up to the budget. Call once, before serving.
  RepositoryIndex open();

  // The factors of a stored id: from memory, else loaded from the repository. Throws NotFound
  // (never decomposed, deleted, or its entry is corrupt), Unavailable (the repository cannot be
  // reached) or ResourceExhausted (no memory to load it into).
  [[nodiscard]] std::shared_ptr<const Factors> find(const std::string& id);

  // Writes newly decomposed factors (resident already) to the repository as the durability says,
  // and calls `answer` when the Decompose may be answered: sync, once the write is confirmed (with
  // its error if it failed; the image is then dropped from memory too, so an error means not
  // stored); async, at once after queueing the write (waiting while the queue is full); none, at
  // once.
  void persist(const std::string& id, std::shared_ptr<const Factors> factors,
               std::function<void(std::exception_ptr)> answer);

  // Deletes from memory and the repository; the bytes freed in memory. Throws NotFound when
  // neither held it.
  std::size_t erase(const std::string& id);

  // Finishes queued writes. Idempotent; the server calls it once the pipeline is drained.
  void close();

  [[nodiscard]] RepositoryCounters counters() const;
  [[nodiscard]] FactorStore& store() noexcept { return store_; }

 private:
  [[nodiscard]] std::shared_ptr<const Factors> load(const std::string& id);
  // After a load put id in memory: whether a delete came meanwhile (then it is taken out again).
  bool deleted_while_loading(const std::string& id);
  void mark_deleted_if_loading(const std::string& id);
  // The intact headers of every entry; counts (and logs) the others.
  void scan_into(std::vector<EntryHead>& heads, std::size_t& skipped);
  void write(const std::string& id, const std::shared_ptr<const Factors>& factors);

  FactorStore& store_;
  Backend& backend_;
  const std::unique_ptr<FactorRepository> repository_;
  const FactorCacheOptions options_;

  // A load in progress: later callers of the id wait on its result; a delete of the id meanwhile
  // marks it, and the load takes back what it put in memory instead of answering with it.
  struct Loading {
    std::shared_future<std::shared_ptr<const Factors>> result;
    bool deleted = false;
  };
  std::mutex loading_mutex_;
  std::map<std::string, Loading> loading_;  // guarded by loading_mutex_

  std::atomic<uint64_t> hits_{0}, misses_{0}, loads_{0}, load_failures_{0}, corrupt_{0};
  std::atomic<uint64_t> writes_{0}, write_failures_{0}, bytes_read_{0}, bytes_written_{0};
  std::atomic<uint64_t> load_ns_{0};

  // Last: its lanes finish their writes before anything they use goes.
  std::unique_ptr<RepositoryWriter> writer_;
};

}  // namespace svdserve
