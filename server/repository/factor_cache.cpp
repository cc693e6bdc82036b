#include "server/repository/factor_cache.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "kernels/errors.hpp"
#include "server/runtime/unix_time.hpp"
#include "server/repository/factor_codec.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

NotFound unknown_image(const std::string& id) {
  return NotFound("no image with id '" + id + "'; decompose it first (ListImages shows ids)");
}

}  // namespace

FactorCache::FactorCache(FactorStore& store, Backend& backend,
                         std::unique_ptr<FactorRepository> repository, FactorCacheOptions options)
    : store_(store), backend_(backend), repository_(std::move(repository)), options_(options) {
  if (repository_ != nullptr) {
    writer_ = std::make_unique<RepositoryWriter>(options_.writer_threads,
                                                 options_.write_queue_capacity);
  }
}

FactorCache::~FactorCache() { close(); }

std::string FactorCache::describe() const {
  return repository_ != nullptr ? repository_->describe() : "none";
}

void FactorCache::scan_into(std::vector<EntryHead>& heads, std::size_t& skipped) {
  repository_->scan(kIndexPrefixBytes, [&](const RepositoryEntryHead& entry) {
    try {
      EntryHead head = decode_head(entry.head);
      if (head.total_bytes != entry.total_bytes) {
        throw CorruptEntry("the entry is " + std::to_string(entry.total_bytes) +
                           " bytes, its header says " + std::to_string(head.total_bytes) +
                           " (truncated or torn)");
      }
      heads.push_back(std::move(head));
    } catch (const CorruptEntry& error) {
      ++skipped;
      ++corrupt_;
      log().warn("repository_skip reason=\"{}\"", error.what());
    }
  });
}

RepositoryIndex FactorCache::open() {
  RepositoryIndex index;
  if (repository_ == nullptr) return index;
  std::vector<EntryHead> heads;
  // A repository that cannot be reached now (Redis restarting) is no reason not to serve: its
  // images load on use once it is back; only the listing and the warm start are lost.
  try {
    scan_into(heads, index.skipped);
  } catch (const Error& error) {
    log().warn("repository_index_skipped reason=\"{}\"", error.what());
  }
  // Most recently written first: the order memory is warmed in.
  std::sort(heads.begin(), heads.end(), [](const EntryHead& a, const EntryHead& b) {
    return a.written_unix_ms > b.written_unix_ms;
  });
  for (const EntryHead& head : heads) {
    store_.remember_stored(StoredImageInfo{.id = head.id,
                                           .shape = head.shape,
                                           .rank_kept = head.rank_kept,
                                           .bytes = 0,
                                           .resident = false,
                                           .stored = true,
                                           .created_unix_ms = head.written_unix_ms,
                                           .last_used_unix_ms = head.written_unix_ms});
  }
  index.images = heads.size();
  for (const EntryHead& head : heads) {
    // The factors' own bytes: a lower bound of what the budget will count, so warming stops
    // before it would evict what it warmed.
    const std::size_t bytes = factor_bytes_f32(head.shape, head.rank_kept);
    if (store_.bytes_resident() + bytes > store_.budget_bytes() ||
        store_.images_resident() >= store_.max_images()) {
      break;
    }
    try {
      (void)load(head.id);
      ++index.loaded;
    } catch (const Error& error) {
      log().warn("repository_warm_skip id={} reason=\"{}\"", head.id, error.what());
    }
  }
  return index;
}

std::shared_ptr<const Factors> FactorCache::find(const std::string& id) {
  try {
    auto factors = store_.find(id);
    ++hits_;
    return factors;
  } catch (const NotFound&) {
    if (repository_ == nullptr) throw;
  }
  ++misses_;
  return load(id);
}

std::shared_ptr<const Factors> FactorCache::load(const std::string& id) {
  std::promise<std::shared_ptr<const Factors>> promise;
  std::shared_future<std::shared_ptr<const Factors>> result;
  bool loads_it = false;
  {
    std::lock_guard lock(loading_mutex_);
    if (const auto it = loading_.find(id); it != loading_.end()) {
      result = it->second.result;
    } else {
      result = promise.get_future().share();
      loading_.emplace(id, Loading{.result = result});
      loads_it = true;
    }
  }
  if (!loads_it) return result.get();  // another call's load, or its error

  const auto start = std::chrono::steady_clock::now();
  bool absent = false;
  try {
    std::optional<std::string> encoded = repository_->get(id);
    absent = !encoded;
    if (absent) throw unknown_image(id);
    bytes_read_ += encoded->size();
    DecodedEntry entry;
    try {
      entry = decode_factors(*encoded);
      if (entry.head.id != id) throw CorruptEntry("the entry holds another id");
    } catch (const CorruptEntry& error) {
      ++corrupt_;
      log().error("repository_corrupt id={} reason=\"{}\"", id, error.what());
      throw NotFound("the stored factors of image '" + id +
                     "' are damaged and were not loaded; decompose it again");
    }
    encoded.reset();
    // A Decompose of the id meanwhile is newer than the entry read here: it stays.
    std::shared_ptr<const Factors> factors =
        store_.insert_loaded(id, backend_.from_host(entry.factors));
    if (deleted_while_loading(id)) throw unknown_image(id);
    ++loads_;
    load_ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - start)
                                          .count());
    promise.set_value(std::move(factors));
  } catch (...) {
    if (!absent) ++load_failures_;
    promise.set_exception(std::current_exception());
  }
  {
    std::lock_guard lock(loading_mutex_);
    loading_.erase(id);
  }
  return result.get();
}

bool FactorCache::deleted_while_loading(const std::string& id) {
  {
    std::lock_guard lock(loading_mutex_);
    const auto it = loading_.find(id);
    if (it == loading_.end() || !it->second.deleted) return false;
  }
  // The delete came after this load read the entry: what it put in memory must go too.
  try {
    (void)store_.erase(id);
  } catch (const NotFound&) {
  }
  return true;
}

void FactorCache::write(const std::string& id, const std::shared_ptr<const Factors>& factors) {
  const std::string encoded = encode_factors(id, backend_.to_host(*factors), now_unix_ms());
  repository_->put(id, encoded);
  ++writes_;
  bytes_written_ += encoded.size();
  if (!store_.mark_stored(id, factors.get())) {
    // Evicted and forgotten while it was written: listed again, as the repository has it. A
    // delete of the id queued behind this write unlists it again (erase()).
    store_.remember_stored(StoredImageInfo{.id = id,
                                           .shape = factors->shape(),
                                           .rank_kept = factors->rank_kept(),
                                           .bytes = 0,
                                           .resident = false,
                                           .stored = true,
                                           .created_unix_ms = now_unix_ms(),
                                           .last_used_unix_ms = now_unix_ms()});
  }
}

void FactorCache::persist(const std::string& id, std::shared_ptr<const Factors> factors,
                          std::function<void(std::exception_ptr)> answer) {
  if (repository_ == nullptr) {
    answer(nullptr);
    return;
  }
  if (options_.durability == Durability::async) {
    writer_->submit(id, [this, id, factors = std::move(factors)] {
      try {
        write(id, factors);
      } catch (const std::exception& error) {
        ++write_failures_;
        log().error("repository_write_failed id={} durability=async error=\"{}\"", id,
                    error.what());
      }
    });
    answer(nullptr);
    return;
  }
  writer_->submit(id, [this, id, factors = std::move(factors), answer = std::move(answer)] {
    std::exception_ptr error;
    try {
      write(id, factors);
    } catch (const std::exception& failure) {
      error = std::current_exception();
      ++write_failures_;
      log().error("repository_write_failed id={} durability=sync error=\"{}\"", id,
                  failure.what());
      // Not stored means not kept: the caller is told so, and memory must not say otherwise.
      if (store_.peek(id) == factors) {
        try {
          (void)store_.erase(id);
        } catch (const NotFound&) {  // deleted meanwhile
        }
      }
    }
    answer(error);
  });
}

void FactorCache::mark_deleted_if_loading(const std::string& id) {
  std::lock_guard lock(loading_mutex_);
  if (const auto it = loading_.find(id); it != loading_.end()) it->second.deleted = true;
}

std::size_t FactorCache::erase(const std::string& id) {
  mark_deleted_if_loading(id);
  std::size_t freed = 0;
  bool found = false;
  try {
    freed = store_.erase(id);
    found = true;
  } catch (const NotFound&) {
    if (repository_ == nullptr) throw;
  }
  if (repository_ != nullptr) {
    // On the id's lane: after any write of it still queued, so that write cannot bring it back.
    std::promise<bool> erased;
    writer_->submit(id, [&] {
      try {
        erased.set_value(repository_->erase(id));
      } catch (...) {
        erased.set_exception(std::current_exception());
      }
    });
    found = erased.get_future().get() || found;
    // A load that started while the delete waited for its lane may have read the entry before it
    // went: marked again and taken out of memory again, whichever of the two comes second.
    mark_deleted_if_loading(id);
    try {
      freed += store_.erase(id);
    } catch (const NotFound&) {
    }
  }
  if (!found) throw NotFound("no image with id '" + id + "'");
  return freed;
}

void FactorCache::close() {
  if (writer_ != nullptr) writer_->close();
}

RepositoryCounters FactorCache::counters() const {
  return RepositoryCounters{.hits = hits_.load(),
                            .misses = misses_.load(),
                            .loads = loads_.load(),
                            .load_failures = load_failures_.load(),
                            .corrupt_entries = corrupt_.load(),
                            .writes = writes_.load(),
                            .write_failures = write_failures_.load(),
                            .bytes_read = bytes_read_.load(),
                            .bytes_written = bytes_written_.load(),
                            .load_seconds = static_cast<double>(load_ns_.load()) * 1e-9,
                            .writes_queued = writer_ != nullptr ? writer_->queued() : 0};
}

}  // namespace svdserve
