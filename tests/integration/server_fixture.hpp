#pragma once
// A real svdserve (CPU backend) on a loopback port, started inside the test process, and a real
// client talking to it over gRPC.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "client/client.hpp"
#include "process.hpp"
#include "server/process/config.hpp"
#include "server/process/server.hpp"

namespace svdserve::testing {

// Small defaults so tests run fast on 2 cores; each test may adjust before start().
[[nodiscard]] v1::ServerConfig test_config();

// Reads a file from the real test image folder.
[[nodiscard]] std::string read_test_image(const std::string& name);
[[nodiscard]] std::string read_file_bytes(const std::string& path);

class ServerFixture : public ::testing::Test {
 protected:
  void TearDown() override { stop(); }

  void start(v1::ServerConfig config = test_config());
  void stop();
  [[nodiscard]] std::string target() const;

  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
};

// The real svdserve binary (CPU backend) on a free loopback port, SERVING once constructed
// (serving() says whether it got there). `args` are added to the command line.
class ServerProcess {
 public:
  explicit ServerProcess(const std::vector<std::string>& args = {});

  [[nodiscard]] bool serving() const noexcept { return serving_; }
  [[nodiscard]] const std::string& address() const noexcept { return address_; }
  [[nodiscard]] Process& process() noexcept { return process_; }
  // A client with a 60 s deadline per call.
  [[nodiscard]] const Client& client() const noexcept { return client_; }

 private:
  std::string address_;
  Process process_;
  Client client_;
  bool serving_ = false;
};

}  // namespace svdserve::testing
