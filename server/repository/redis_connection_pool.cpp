#include "server/repository/redis_connection_pool.hpp"

#include <utility>

#include "kernels/errors.hpp"

namespace svdserve {

// One taken slot: returned to the pool when the call ends, empty when its link broke.
class RedisConnectionPool::Slot {
 public:
  explicit Slot(RedisConnectionPool& pool) : pool_(pool) {
    std::unique_lock lock(pool_.mutex_);
    if (!pool_.slot_freed_.wait_for(lock, pool_.options_.timeout,
                                    [&] { return !pool_.free_.empty(); })) {
      throw Unavailable("the Redis factor repository is busy: no connection became free within " +
                        std::to_string(pool_.options_.timeout.count()) + " ms");
    }
    connection_ = std::move(pool_.free_.back());
    pool_.free_.pop_back();
  }
  ~Slot() {
    if (connection_ && connection_->broken()) connection_.reset();
    {
      const std::lock_guard lock(pool_.mutex_);
      if (connection_) pool_.free_.push_back(std::move(connection_));
      else pool_.free_.push_front(nullptr);
    }
    pool_.slot_freed_.notify_one();
  }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

  [[nodiscard]] std::unique_ptr<RedisConnection>& connection() noexcept { return connection_; }

 private:
  RedisConnectionPool& pool_;
  std::unique_ptr<RedisConnection> connection_;
};

RedisConnectionPool::RedisConnectionPool(RedisOptions options) : options_(std::move(options)) {
  if (options_.pool_size == 0) {
    throw InvalidArgument("the Redis factor repository needs at least one connection "
                          "(redis_pool_size)");
  }
  if (options_.timeout <= std::chrono::milliseconds::zero()) {
    throw InvalidArgument("the Redis factor repository needs a timeout above 0 (redis_timeout_ms)");
  }
  free_.resize(options_.pool_size);
}

void RedisConnectionPool::run(const std::function<void(RedisConnection&)>& call) {
  Slot slot(*this);
  std::unique_ptr<RedisConnection>& connection = slot.connection();
  if (!connection) {
    connection = std::make_unique<RedisConnection>(options_);
    call(*connection);
    return;
  }
  try {
    call(*connection);
    return;
  } catch (const Error&) {
    // A timeout is not retried: Redis is there but slow, and waiting twice helps no one.
    if (!connection->broken() || connection->timed_out()) throw;
  }
  connection = std::make_unique<RedisConnection>(options_);
  call(*connection);
}

}  // namespace svdserve
