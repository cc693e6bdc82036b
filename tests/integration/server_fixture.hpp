#pragma once
// A real svdserve (CPU backend) on a loopback port, started inside the test process, and a real
// client talking to it over gRPC.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "client/client.hpp"
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

}  // namespace svdserve::testing
