#include "tests/server/repository/redis_server.hpp"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace svdserve::testing {
namespace {

constexpr auto kStartLimit = std::chrono::seconds(20);
constexpr auto kStopLimit = std::chrono::seconds(20);
constexpr auto kPollInterval = std::chrono::milliseconds(5);

struct Reply {
  void operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }
};
struct Context {
  void operator()(redisContext* context) const noexcept { redisFree(context); }
};

}  // namespace

std::optional<std::string> RedisServer::binary() {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    const std::filesystem::path candidate = std::filesystem::path(folder) / "redis-server";
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

RedisServer::RedisServer(std::string password)
    : password_(std::move(password)), port_(free_port()),
      config_path_(folder_.path() / "redis.conf") {
  std::ofstream(config_path_) << "bind 127.0.0.1\n"
                              << "port " << port_ << "\n"
                              << "save \"\"\n"
                              << "appendonly no\n"
                              << "requirepass " << password_ << "\n"
                              << "dir " << folder_.path().string() << "\n"
                              << "daemonize no\n";
  start();
}

RedisServer::~RedisServer() {
  if (process_) {
    if (paused_) process_->signal(SIGCONT);
    process_->signal(SIGKILL);
    (void)process_->wait(kStopLimit);
  }
}

void RedisServer::start() {
  process_ = std::make_unique<Process>(*binary(), std::vector<std::string>{config_path_.string()});
  const auto deadline = std::chrono::steady_clock::now() + kStartLimit;
  while (!answers()) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("redis-server did not answer on port " + std::to_string(port_));
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

void RedisServer::stop() {
  resume();
  process_->signal(SIGTERM);
  (void)process_->wait(kStopLimit);
  process_.reset();
}

void RedisServer::pause() {
  process_->signal(SIGSTOP);
  paused_ = true;
}

void RedisServer::resume() {
  if (paused_) process_->signal(SIGCONT);
  paused_ = false;
}

std::string RedisServer::address() const { return "127.0.0.1:" + std::to_string(port_); }

bool RedisServer::answers() const {
  try {
    return command({"PING"}) == "PONG";
  } catch (const std::runtime_error&) {
    return false;
  }
}

std::string RedisServer::command(const std::vector<std::string>& arguments) const {
  const std::unique_ptr<redisContext, Context> context(
      redisConnectWithTimeout("127.0.0.1", port_, timeval{.tv_sec = 1, .tv_usec = 0}));
  if (!context || context->err != 0) throw std::runtime_error("cannot connect to redis-server");
  const auto run = [&](const std::vector<std::string>& words) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const std::string& word : words) {
      argv.push_back(word.data());
      lengths.push_back(word.size());
    }
    const std::unique_ptr<redisReply, Reply> reply(static_cast<redisReply*>(redisCommandArgv(
        context.get(), static_cast<int>(argv.size()), argv.data(), lengths.data())));
    if (!reply) throw std::runtime_error("redis-server closed the connection");
    const std::string text = reply->type == REDIS_REPLY_INTEGER
                                 ? std::to_string(reply->integer)
                                 : std::string(reply->str != nullptr ? reply->str : "", reply->len);
    if (reply->type == REDIS_REPLY_ERROR) throw std::runtime_error("redis-server: " + text);
    return text;
  };
  (void)run({"AUTH", password_});
  return run(arguments);
}

}  // namespace svdserve::testing
