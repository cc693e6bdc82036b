#include "server/repository/redis_connection.hpp"

#include <signal.h>

#include <cerrno>
#include <mutex>

#include "kernels/errors.hpp"
#include "server/repository/redis_address.hpp"

namespace svdserve {
namespace {

constexpr std::string_view kWho = "the Redis factor repository";

timeval to_timeval(std::chrono::milliseconds timeout) {
  constexpr long kMillisecondsPerSecond = 1000;
  constexpr long kMicrosecondsPerMillisecond = 1000;
  const long ms = static_cast<long>(timeout.count());
  return timeval{.tv_sec = ms / kMillisecondsPerSecond,
                 .tv_usec = (ms % kMillisecondsPerSecond) * kMicrosecondsPerMillisecond};
}

// hiredis writes with write(2): a Redis that closed the connection would end the process with
// SIGPIPE instead of failing the call. Left alone where someone installed a handler.
void ignore_sigpipe_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current{};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
  });
}

// The first word of an error reply ("OOM", "LOADING", "WRONGTYPE"); "ERR" when it has none. The
// rest of the text is never passed on: it may quote what was sent.
std::string error_code(const redisReply& reply) {
  constexpr std::size_t kMaxCodeLength = 32;
  const std::string_view text(reply.str, reply.len);
  const std::string_view word = text.substr(0, text.find(' '));
  if (word.empty() || word.size() > kMaxCodeLength) return "ERR";
  for (const char c : word) {
    if (c < 'A' || c > 'Z') return "ERR";
  }
  return std::string(word);
}

// Replies that mean "not now": Redis is starting, busy, a replica, or cannot persist.
bool is_transient(std::string_view code) {
  for (const std::string_view transient :
       {"LOADING", "BUSY", "MASTERDOWN", "READONLY", "TRYAGAIN", "CLUSTERDOWN", "MISCONF",
        "NOREPLICAS"}) {
    if (code == transient) return true;
  }
  return false;
}

}  // namespace

void check_reply(const redisReply& reply) {
  if (reply.type != REDIS_REPLY_ERROR) return;
  const std::string code = error_code(reply);
  const std::string who(kWho);
  if (code == "OOM") {
    throw ResourceExhausted(who + " is out of memory (its maxmemory; docs/REDIS.md)");
  }
  if (code == "NOAUTH") {
    throw Unavailable(who + " needs a password (redis_password_file)");
  }
  if (is_transient(code)) throw Unavailable(who + " cannot answer now (" + code + ")");
  throw InternalError(who + " answered with an error (" + code + ")");
}

RedisConnection::RedisConnection(const RedisOptions& options) : timeout_(options.timeout) {
  ignore_sigpipe_once();
  const std::optional<RedisEndpoint> endpoint = parse_redis_address(options.address);
  if (!endpoint) {
    throw InvalidArgument(std::string(kWho) +
                          " needs an address host:port or unix:/path (redis_address)");
  }
  const timeval timeout = to_timeval(timeout_);
  context_.reset(endpoint->unix_path.empty()
                     ? redisConnectWithTimeout(endpoint->host.c_str(), endpoint->port, timeout)
                     : redisConnectUnixWithTimeout(endpoint->unix_path.c_str(), timeout));
  if (!context_) throw ResourceExhausted(std::string(kWho) + ": no memory for a connection");
  if (context_->err != 0) fail_link(errno);
  if (redisSetTimeout(context_.get(), timeout) != REDIS_OK) fail_link(errno);
  if (options.password.empty()) return;

  RedisCommand auth{"AUTH"};
  if (!options.username.empty()) auth.push_back(options.username);
  auth.push_back(options.password);
  const RedisReply reply = round_trip(auth);
  if (reply->type == REDIS_REPLY_ERROR) {
    if (is_transient(error_code(*reply))) check_reply(*reply);
    // The reply's text is not passed on: some versions quote the AUTH arguments.
    broken_ = true;
    throw Unavailable(std::string(kWho) + " refused the password (redis_password_file" +
                      (options.username.empty() ? "" : ", redis_username") + ")");
  }
}

RedisReply RedisConnection::command(const RedisCommand& arguments) {
  RedisReply reply = round_trip(arguments);
  check_reply(*reply);
  return reply;
}

std::vector<RedisReply> RedisConnection::pipeline(const std::vector<RedisCommand>& commands) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const RedisCommand& arguments : commands) {
    argv.clear();
    lengths.clear();
    for (const std::string_view argument : arguments) {
      argv.push_back(argument.empty() ? "" : argument.data());
      lengths.push_back(argument.size());
    }
    if (redisAppendCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(),
                               lengths.data()) != REDIS_OK) {
      fail_link(errno);
    }
  }
  std::vector<RedisReply> replies;
  replies.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    void* reply = nullptr;
    if (redisGetReply(context_.get(), &reply) != REDIS_OK || reply == nullptr) fail_link(errno);
    replies.emplace_back(static_cast<redisReply*>(reply));
  }
  return replies;
}

RedisReply RedisConnection::round_trip(const RedisCommand& arguments) {
  std::vector<RedisReply> replies = pipeline({arguments});
  return std::move(replies.front());
}

void RedisConnection::fail_link(int saved_errno) {
  broken_ = true;
  const std::string who(kWho);
  // errno only means something for an I/O error: at end of file it is left from earlier calls.
  timed_out_ = context_->err == REDIS_ERR_IO &&
               (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == ETIMEDOUT ||
                saved_errno == EINPROGRESS);
  if (timed_out_) {
    throw Unavailable(who + " did not answer within " + std::to_string(timeout_.count()) + " ms");
  }
  if (context_->err == REDIS_ERR_EOF) throw Unavailable(who + " closed the connection");
  if (context_->err == REDIS_ERR_PROTOCOL) {
    // Something else listens at redis_address, or the stream is corrupt.
    throw InternalError(who + " sent a reply that is not Redis protocol");
  }
  throw Unavailable(who + " cannot be reached (" + std::string(context_->errstr) + ")");
}

}  // namespace svdserve
