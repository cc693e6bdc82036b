// --address-file: the real binary on port 0 says where it listens once it serves, a client
// reaches it there, and the file is gone once the server stops serving.

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "client/client.hpp"
#include "process.hpp"
#include "server_process.hpp"
#include "tests/client/temp_folder.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

constexpr auto kStartLimit = std::chrono::milliseconds(60'000);
constexpr auto kExitLimit = std::chrono::seconds(30);

TEST(AddressFileTest, AServerOnPortZeroSaysWhereItListensUntilItStops) {
  const TempFolder folder("svdserve_address_file");
  const std::filesystem::path file = folder.path() / "address";
  Process server(svdserve::test::server_binary(),
                 {"--listen", "0.0.0.0:0", "--backend", "cpu", "--durability", "none",
                  "--address-file", file.string()});
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(file); }, kStartLimit));
  std::string address;
  std::ifstream(file) >> address;
  ASSERT_TRUE(address.starts_with("127.0.0.1:")) << address;
  EXPECT_NE(address, "127.0.0.1:0");

  ClientOptions options;
  options.timeout = std::chrono::seconds(30);
  const Client client(address, options);
  const auto health = client.health();
  ASSERT_TRUE(health.ok()) << health.status().error_message();
  EXPECT_EQ(*health, HealthStatus::serving);

  server.signal(SIGTERM);
  const ProcessResult result = server.wait(kExitLimit);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(AddressFileTest, AnAddressFileThatCannotBeWrittenFailsTheStart) {
  const TempFolder folder("svdserve_address_file");
  Process server(svdserve::test::server_binary(),
                 {"--listen", "127.0.0.1:0", "--backend", "cpu", "--durability", "none",
                  "--address-file", (folder.path() / "missing-folder" / "address").string()});
  const ProcessResult result = server.wait(kExitLimit);
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("address file"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace svdserve::testing
