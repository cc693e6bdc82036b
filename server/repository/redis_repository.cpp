#include "server/repository/redis_repository.hpp"

#include <filesystem>
#include <fstream>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kernels/errors.hpp"
#include "server/repository/redis_address.hpp"
#include "server/repository/redis_connection.hpp"
#include "server/repository/redis_connection_pool.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

constexpr std::string_view kScanBatch = "1000";  // keys per SCAN round trip

[[noreturn]] void unexpected_reply(std::string_view command) {
  throw InternalError("the Redis factor repository answered " + std::string(command) +
                      " with an unexpected reply");
}

// SCAN's MATCH is a glob: the prefix's own *, ?, [ and \ must match only themselves.
std::string glob_escaped(std::string_view text) {
  std::string escaped;
  for (const char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

// One SCAN step: the next cursor and the keys it returned.
struct ScanStep {
  std::string cursor;
  std::vector<std::string> keys;
};

ScanStep parse_scan_reply(const redisReply& reply) {
  if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 2 ||
      reply.element[0]->type != REDIS_REPLY_STRING ||
      reply.element[1]->type != REDIS_REPLY_ARRAY) {
    unexpected_reply("SCAN");
  }
  ScanStep step{.cursor = std::string(reply.element[0]->str, reply.element[0]->len), .keys = {}};
  const redisReply& keys = *reply.element[1];
  step.keys.reserve(keys.elements);
  for (std::size_t i = 0; i < keys.elements; ++i) {
    if (keys.element[i]->type != REDIS_REPLY_STRING) unexpected_reply("SCAN");
    step.keys.emplace_back(keys.element[i]->str, keys.element[i]->len);
  }
  return step;
}

}  // namespace

RedisRepository::RedisRepository(RedisOptions options)
    : address_(options.address), key_prefix_(options.key_prefix) {
  if (!parse_redis_address(options.address)) {
    throw InvalidArgument("redis_address must be host:port or unix:/absolute/path, got '" +
                          options.address + "'");
  }
  pool_ = std::make_unique<RedisConnectionPool>(std::move(options));
}

RedisRepository::~RedisRepository() = default;

std::string RedisRepository::describe() const { return "redis " + address_; }

void RedisRepository::put(const std::string& id, std::string_view encoded) {
  const std::string key = key_prefix_ + id;
  pool_->run([&](RedisConnection& connection) {
    const RedisReply reply = connection.command({"SET", key, encoded});
    if (reply->type != REDIS_REPLY_STATUS) unexpected_reply("SET");
  });
}

std::optional<std::string> RedisRepository::get(const std::string& id) {
  const std::string key = key_prefix_ + id;
  std::optional<std::string> value;
  pool_->run([&](RedisConnection& connection) {
    const RedisReply reply = connection.command({"GET", key});
    if (reply->type == REDIS_REPLY_NIL) return;
    if (reply->type != REDIS_REPLY_STRING) unexpected_reply("GET");
    value.emplace(reply->str, reply->len);
  });
  return value;
}

bool RedisRepository::erase(const std::string& id) {
  const std::string key = key_prefix_ + id;
  bool erased = false;
  pool_->run([&](RedisConnection& connection) {
    const RedisReply reply = connection.command({"DEL", key});
    if (reply->type != REDIS_REPLY_INTEGER) unexpected_reply("DEL");
    erased = reply->integer > 0;
  });
  return erased;
}

void RedisRepository::scan(std::size_t head_bytes,
                           const std::function<void(const RepositoryEntryHead&)>& visit) {
  const std::string pattern = glob_escaped(key_prefix_) + "*";
  // GETRANGE's end is inclusive, and 0..-1 would be the whole value.
  const std::string last_head_byte = std::to_string(head_bytes == 0 ? 0 : head_bytes - 1);
  // SCAN may return a key more than once (while Redis rehashes); each is visited once.
  std::unordered_set<std::string> seen;
  std::string cursor = "0";
  do {
    ScanStep step;
    std::vector<RedisReply> replies;
    // Each step on a connection of its own, released before `visit` runs: a visit may call back.
    pool_->run([&](RedisConnection& connection) {
      step = parse_scan_reply(
          *connection.command({"SCAN", cursor, "MATCH", pattern, "COUNT", kScanBatch}));
      std::vector<RedisCommand> commands;
      commands.reserve(2 * step.keys.size());
      for (const std::string& key : step.keys) {
        commands.push_back({"GETRANGE", key, "0", last_head_byte});
        commands.push_back({"STRLEN", key});
      }
      replies = connection.pipeline(commands);
    });
    cursor = std::move(step.cursor);
    for (std::size_t i = 0; i < step.keys.size(); ++i) {
      const std::string& key = step.keys[i];
      const redisReply& head = *replies[2 * i];
      const redisReply& size = *replies[2 * i + 1];
      if (!key.starts_with(key_prefix_) || !seen.insert(key).second) continue;
      const std::string_view id = std::string_view(key).substr(key_prefix_.size());
      if (head.type != REDIS_REPLY_STRING || size.type != REDIS_REPLY_INTEGER) {
        log().warn("redis repository: skipped an entry that is not a string id={}", id);
        continue;
      }
      if (size.integer == 0) continue;  // erased between SCAN and GETRANGE
      visit(RepositoryEntryHead{
          .head = std::string_view(head.str, head_bytes > 0 ? head.len : 0),
          .total_bytes = static_cast<uint64_t>(size.integer),
          .written_unix_ms = 0,  // the encoding's header carries the time
      });
    }
  } while (cursor != "0");
}

std::string read_redis_password(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw InvalidArgument("redis_password_file '" + path + "' is not a readable file");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InvalidArgument("redis_password_file '" + path + "' cannot be read");
  std::string line;
  std::getline(file, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) {
    throw InvalidArgument("redis_password_file '" + path +
                          "' has an empty first line (it must hold the password)");
  }
  return line;
}

}  // namespace svdserve
