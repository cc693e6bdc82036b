#pragma once
// One hiredis connection, connected and authenticated when made, used by one thread at a time.
// Failures become svdserve::Error with messages that name neither the address nor a password:
// Unavailable when the link fails or times out (the connection is then broken() and must be
// dropped), or for the error replies that mean "not now" (LOADING, BUSY, READONLY, ...).

#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/repository/redis_repository.hpp"

namespace svdserve {

struct RedisReplyDeleter {
  void operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }
};
using RedisReply = std::unique_ptr<redisReply, RedisReplyDeleter>;

// A command's arguments, each binary-safe.
using RedisCommand = std::vector<std::string_view>;

// Throws the error an error reply stands for; does nothing for any other reply.
void check_reply(const redisReply& reply);

class RedisConnection {
 public:
  // Connects within the timeout, applies it to every later read and write, and sends AUTH when
  // there is a password. Throws Unavailable when Redis cannot be reached or refuses the password.
  explicit RedisConnection(const RedisOptions& options);
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // One round trip. Error replies are thrown (check_reply).
  [[nodiscard]] RedisReply command(const RedisCommand& arguments);
  // All commands in one round trip; the replies in order, error replies included.
  [[nodiscard]] std::vector<RedisReply> pipeline(const std::vector<RedisCommand>& commands);

  // The link failed: the connection is useless and must be replaced.
  [[nodiscard]] bool broken() const noexcept { return broken_; }
  // It failed by the timeout rather than by being closed or reset.
  [[nodiscard]] bool timed_out() const noexcept { return timed_out_; }

 private:
  struct ContextDeleter {
    void operator()(redisContext* context) const noexcept { redisFree(context); }
  };

  // One command, its reply unchecked.
  [[nodiscard]] RedisReply round_trip(const RedisCommand& arguments);
  [[noreturn]] void fail_link(int saved_errno);

  std::unique_ptr<redisContext, ContextDeleter> context_;
  std::chrono::milliseconds timeout_;
  bool broken_ = false;
  bool timed_out_ = false;
};

}  // namespace svdserve
