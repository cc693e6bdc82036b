#pragma once
// The factor repository in Redis: one string key per image, `key_prefix + id`, through a small
// pool of hiredis connections. Durability is Redis's own (docs/REDIS.md: AOF, appendfsync);
// hiredis 0.14 has no TLS, so the link must be a private network or a TLS tunnel.
//
// A Redis that is down or slow makes calls fail with Unavailable within about the timeout; the
// next call after it is back reconnects, so the server never needs a restart for it.

#include <chrono>
#include <memory>
#include <string>

#include "server/repository/factor_repository.hpp"

namespace svdserve {

struct RedisOptions {
  std::string address;   // host:port, or unix:/path/to/socket
  std::string username;  // ACL user for AUTH (Redis 6+); empty: the default user
  std::string password;  // empty: no AUTH
  std::chrono::milliseconds timeout{2000};  // connect, each command, and waiting for a connection
  unsigned pool_size = 4;
  std::string key_prefix = "svdserve:factors:";
};

class RedisConnectionPool;

class RedisRepository final : public FactorRepository {
 public:
  // Connects lazily: a Redis that is down at start is not an error until a call needs it.
  explicit RedisRepository(RedisOptions options);
  ~RedisRepository() override;
  RedisRepository(const RedisRepository&) = delete;
  RedisRepository& operator=(const RedisRepository&) = delete;

  [[nodiscard]] std::string describe() const override;
  void put(const std::string& id, std::string_view encoded) override;
  [[nodiscard]] std::optional<std::string> get(const std::string& id) override;
  bool erase(const std::string& id) override;
  void scan(std::size_t head_bytes,
            const std::function<void(const RepositoryEntryHead&)>& visit) override;

 private:
  std::string address_;
  std::string key_prefix_;
  std::unique_ptr<RedisConnectionPool> pool_;
};

// The first line of a password file, without its line ending (redis_password_file). Throws
// InvalidArgument naming the file, never quoting it, when it cannot be read or the line is empty.
[[nodiscard]] std::string read_redis_password(const std::string& path);

}  // namespace svdserve
