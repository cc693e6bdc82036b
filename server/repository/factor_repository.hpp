#pragma once
// The durable tier under the factor store: each image's factors, encoded (factor_codec.hpp),
// under its stored id. The store is a cache of it: what it evicts or never held is loaded from
// here on demand, and a restarted server, or another replica sharing it, sees what was written.
// Two kinds: a folder (directory_repository.hpp, the default) and Redis (redis_repository.hpp).
//
// Every method may be called from several threads at once. Failures are svdserve::Error:
// Unavailable when the repository cannot be reached or answer in time, ResourceExhausted when it
// has no room, InternalError for anything else; messages never carry paths or credentials.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace svdserve {

// What a scan sees of one entry: the first bytes of its encoding (enough for the header and the
// id, factor_codec.hpp's kIndexPrefixBytes), its whole size, and when it was written.
struct RepositoryEntryHead {
  std::string_view head;
  uint64_t total_bytes = 0;
  int64_t written_unix_ms = 0;
};

class FactorRepository {
 public:
  virtual ~FactorRepository() = default;

  // For the start-up log: the kind and where ("directory /var/lib/svdserve",
  // "redis 10.0.0.5:6379"), never a password.
  [[nodiscard]] virtual std::string describe() const = 0;

  // Stores `encoded` under `id`, replacing what was there; when it returns, the bytes are as
  // durable as this repository makes them (the folder: fsync'd and renamed; Redis: as its
  // persistence is configured). A reader sees the old entry or the new one, never a mix.
  virtual void put(const std::string& id, std::string_view encoded) = 0;

  // The encoded factors stored under `id`; nullopt when there are none.
  [[nodiscard]] virtual std::optional<std::string> get(const std::string& id) = 0;

  // Removes the entry; whether there was one.
  virtual bool erase(const std::string& id) = 0;

  // Calls `visit` once for every entry, in no particular order, with the first `head_bytes` of
  // its encoding (fewer when it is shorter). An entry that cannot be read is skipped (and logged),
  // never a reason to stop.
  virtual void scan(std::size_t head_bytes,
                    const std::function<void(const RepositoryEntryHead&)>& visit) = 0;
};

}  // namespace svdserve
