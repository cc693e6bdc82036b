#pragma once
// pool_size Redis connections, each used by one call at a time. A call waits up to the timeout
// for a free one; connections are made when first needed and dropped when their link breaks, so
// a Redis that was down is reconnected to by the next call, with no restart.

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "server/repository/redis_connection.hpp"
#include "server/repository/redis_repository.hpp"

namespace svdserve {

class RedisConnectionPool {
 public:
  explicit RedisConnectionPool(RedisOptions options);

  // Runs `call` on a connection of its own. A reused connection found closed (Redis restarted,
  // or dropped an idle client) is replaced and `call` runs once more: every command sent is
  // idempotent. Throws Unavailable when no connection is free within the timeout.
  void run(const std::function<void(RedisConnection&)>& call);

 private:
  class Slot;

  const RedisOptions options_;
  std::mutex mutex_;
  std::condition_variable slot_freed_;
  // Free slots: connected ones at the back (taken first), empty ones (nullptr) at the front.
  std::deque<std::unique_ptr<RedisConnection>> free_;  // guarded by mutex_
};

}  // namespace svdserve
