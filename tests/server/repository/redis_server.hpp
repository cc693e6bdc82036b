#pragma once
// A real redis-server for one test: a loopback port of its own, a config file in a temp folder,
// no persistence, a password. It is ready when it answers an authenticated PING.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/client/temp_folder.hpp"
#include "tests/integration/process.hpp"

namespace svdserve::testing {

class RedisServer {
 public:
  // redis-server's path on PATH; nullopt when it is not installed.
  [[nodiscard]] static std::optional<std::string> binary();

  explicit RedisServer(std::string password);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts it (again, on the same port) and waits until it answers.
  void start();
  // Ends it with SIGTERM and waits for its exit.
  void stop();
  // SIGSTOP / SIGCONT: a Redis that accepts connections but never answers.
  void pause();
  void resume();

  [[nodiscard]] std::string address() const;
  [[nodiscard]] const std::string& password() const noexcept { return password_; }

  // One command on a connection of its own, for setting up a test (CONFIG SET, foreign keys);
  // the reply as text (strings, status, integers), or an exception with the error reply.
  std::string command(const std::vector<std::string>& arguments) const;

 private:
  [[nodiscard]] bool answers() const;

  std::string password_;
  int port_;
  TempFolder folder_{"svdserve_redis_test"};
  std::filesystem::path config_path_;
  std::unique_ptr<Process> process_;
  bool paused_ = false;
};

}  // namespace svdserve::testing
