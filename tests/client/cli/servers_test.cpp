// svdserve-cli with several --server replicas (in-process fakes): each image goes to its
// rendezvous server and is found there again; a replica that is down costs no call.

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "client/image_files.hpp"
#include "client/rendezvous.hpp"
#include "fake_server.hpp"
#include "run_cli.hpp"
#include "temp_folder.hpp"

namespace svdserve::cli {
namespace {

namespace fs = std::filesystem;
class Servers : public ::testing::Test {
 protected:
  static constexpr int kImages = 12;

  void SetUp() override {
    fs::create_directories(root_ / "in");
    for (int i = 0; i < kImages; ++i) write_file_bytes(root_ / "in" / image_name(i), "4x4x1");
  }

  [[nodiscard]] static std::string image_name(int i) { return "img" + std::to_string(i) + ".png"; }

  std::array<testing::FakeServer, 3> servers_;
  testing::TempFolder folder_{"svdserve_servers_test"};
  const fs::path& root_ = folder_.path();
};

TEST_F(Servers, EachImageGoesToItsRendezvousServerAndIsFoundThere) {
  // Repeated and comma-separated: one list of three.
  const std::vector<std::string> addresses = {servers_[0].address(), servers_[1].address(), servers_[2].address()};
  const std::vector<std::string> server_args = {"--server", addresses[0] + "," + addresses[1], "--server",
                                                addresses[2]};
  const auto with_servers = [&](std::vector<std::string> args) {
    args.insert(args.begin(), server_args.begin(), server_args.end());
    return testing::run_cli(args);
  };

  auto outcome = with_servers({"decompose", (root_ / "in").string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  for (int i = 0; i < kImages; ++i) {
    const auto chosen = rendezvous_order(addresses, image_name(i)).front();
    // The fakes share no repository: each finds only its own images.
    outcome = with_servers({"info", image_name(i)});
    EXPECT_EQ(outcome.code, 0) << image_name(i) << ": " << outcome.err;
    EXPECT_EQ(servers_[chosen].service().routing_header("GetImage"), image_name(i));
    outcome = with_servers({"reconstruct", image_name(i), "--rank", "1", "-o", (root_ / "out.u8").string()});
    EXPECT_EQ(outcome.code, 0) << image_name(i) << ": " << outcome.err;
  }
  std::size_t stored = 0;
  for (auto& server : servers_) stored += server.service().image_count();
  EXPECT_EQ(stored, std::size_t{kImages});  // No image twice.
}

TEST_F(Servers, AReplicaThatIsDownCostsNoCall) {
  // Nothing listens on port 1: its images go to their second server.
  const std::string list = servers_[0].address() + ",127.0.0.1:1," + servers_[1].address();
  const auto outcome = testing::run_cli({"--server", list, "decompose", (root_ / "in").string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(servers_[0].service().image_count() + servers_[1].service().image_count(), std::size_t{kImages});
  EXPECT_EQ(testing::run_cli({"--server", list, "server-info"}).code, 0);
  EXPECT_EQ(testing::run_cli({"--server", list, "server-info"}).code, 0);
  EXPECT_EQ(testing::run_cli({"--server", list, "server-info"}).code, 0);
}

}  // namespace
}  // namespace svdserve::cli
