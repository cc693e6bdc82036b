// The command line end to end, without a server: help, usage errors (exit 2) and an unreachable
// server (exit 3). Nothing listens on port 1 of the loopback interface.

#include "client/cli/cli.hpp"
#include "client/cli/server_address.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "client/image_files.hpp"
#include "run_cli.hpp"
#include "temp_folder.hpp"

namespace svdserve::cli {
namespace {

using testing::contains;

constexpr const char* kNowhere = "127.0.0.1:1";

testing::CliOutcome run(const std::vector<std::string>& args, std::optional<std::string> env_server = std::nullopt) {
  return testing::run_cli(args, std::move(env_server));
}

TEST(Cli, HelpListsCommandsAndExitCodes) {
  const auto outcome = run({"--help"});
  EXPECT_EQ(outcome.code, 0);
  for (const char* part : {"decompose", "reconstruct", "run", "compress", "list", "info", "delete", "stats",
                           "server-info", "health", "profile", "load-dir", "bench", "Exit codes", "--server",
                           "--tls", "--ca FILE", "--cert FILE", "--key FILE"}) {
    EXPECT_TRUE(contains(outcome.out, part)) << part;
  }
}

TEST(Cli, EveryCommandHasHelp) {
  for (const auto& command : all_commands()) {
    const auto outcome = run({std::string(command.name), "--help"});
    EXPECT_EQ(outcome.code, 0) << command.name;
    EXPECT_TRUE(contains(outcome.out, "usage: svdserve-cli " + std::string(command.name))) << command.name;
    EXPECT_EQ(run({"help", std::string(command.name)}).out, outcome.out);
  }
}

TEST(Cli, NoCommandIsAUsageError) {
  const auto outcome = run({});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(contains(outcome.err, "usage:"));
}

TEST(Cli, UsageErrorsExitWithTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {"frobnicate"},
      {"--bogus", "list"},
      {"list", "--bogus"},
      {"list", "extra"},
      {"info"},
      {"--timeout", "soon", "list"},
      {"reconstruct", "id", "-o", "x.png"},                             // No rank.
      {"reconstruct", "id", "--rank", "4", "--energy", "0.5", "-o", "x.png"},
      {"reconstruct", "id", "--rank", "4"},                             // No -o.
      {"reconstruct", "id", "--rank", "0", "-o", "x.png"},
      {"reconstruct", "id", "--energy", "1.5", "-o", "x.png"},
      {"reconstruct", "id", "--rank", "4", "-o", "x.png", "--format", "gif"},
      {"decompose", "a.png", "b.png"},
      {"reconstruct", "id", "--rank", "4", "-o", "x.xyz"},              // No format in the name.
      {"run", ".", "-o", "out"},                                        // No ranks.
      {"run", ".", "--rank", "4,,8", "-o", "out"},
      {"profile", "pause"},
      {"bench", "--op", "reconstruct"},                                 // No image or id.
      {"bench", "--id", "x", "--duration", "1", "--count", "5"},
      {"bench", "--op", "resize", "--id", "x"},
      {"bench", "--id", "x", "--concurrency", "0"},
      {"bench", "--op", "echo", "--id", "x", "--sweep", "1,2"},        // Echo against echo.
      {"bench", "--id", "x", "--sweep", "1,2", "--concurrency", "4"},
      {"bench", "--id", "x", "--sweep", "1,0"},
      {"bench", "--id", "x", "--connections", "0"},
      {"bench", "--op", "compress", "--id", "x", "--image", "a.png"},  // --id is reconstruct's.
      {"--tls", "--cert", "client.crt", "health"},                      // A certificate needs its key.
      {"--key", "client.key", "health"},
      {"health", "--tls", "--ca"},                                      // No FILE.
      {"--ca=", "health"},
      {"--server", "a:1,", "health"},                                   // An empty address.
      {"bench", "--id", "x", "--server", "a:1,b:2"},                   // bench measures one.
  };
  for (const auto& args : bad) {
    auto with_server = args;
    with_server.insert(with_server.begin(), {"--server", kNowhere});
    const auto outcome = run(with_server);
    std::string joined;
    for (const auto& arg : args) joined += arg + " ";
    EXPECT_EQ(outcome.code, 2) << joined << "\n" << outcome.err;
    EXPECT_TRUE(outcome.err.starts_with("error: ")) << joined << "\n" << outcome.err;
  }
}

TEST(Cli, UnreachableServerExitsWithThree) {
  const std::vector<std::vector<std::string>> calls = {
      {"health"},  {"list"},     {"stats"},          {"server-info"}, {"info", "x"},
      {"delete", "x"}, {"profile", "start"}, {"load-dir", "/tmp"},
      {"reconstruct", "x", "--rank", "2", "-o", "/tmp/never.png"}};
  for (const auto& args : calls) {
    auto with_server = args;
    with_server.insert(with_server.begin(), {"--server", kNowhere, "--timeout", "10"});
    const auto outcome = run(with_server);
    EXPECT_EQ(outcome.code, 3) << args.front() << ": " << outcome.err;
    EXPECT_TRUE(outcome.err.starts_with("error: UNAVAILABLE: ")) << args.front() << ": " << outcome.err;
  }
}

TEST(Cli, AServerWithoutAPortIsOnTheDefaultPort) {
  EXPECT_EQ(with_default_port("gpu-box"), "gpu-box:50051");
  EXPECT_EQ(with_default_port("10.0.0.7"), "10.0.0.7:50051");
  EXPECT_EQ(with_default_port("[::1]"), "[::1]:50051");
  EXPECT_EQ(with_default_port("gpu-box:7000"), "gpu-box:7000");
  EXPECT_EQ(with_default_port("[::1]:7000"), "[::1]:7000");
  EXPECT_EQ(with_default_port("unix:/run/svdserve.sock"), "unix:/run/svdserve.sock");
  EXPECT_EQ(with_default_port("dns:///gpu-box:7000"), "dns:///gpu-box:7000");
}

TEST(Cli, ServerFromEnvironmentAndOptionsAfterTheCommand) {
  // The environment names an unreachable server: the call fails with UNAVAILABLE.
  EXPECT_EQ(run({"health"}, std::string(kNowhere)).code, 3);
  // Global options may follow the command, and win over the environment.
  EXPECT_EQ(run({"health", "--server", kNowhere, "--timeout", "5"}, std::string("localhost:50051")).code, 3);
}

class CliFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(root_ / "sub");
    write_file_bytes(root_ / "a.png", "not really a png");
    write_file_bytes(root_ / "sub" / "b.jpg", "nor a jpeg");
    write_file_bytes(root_ / "notes.txt", "skipped");
  }
  testing::TempFolder folder_{"svdserve_cli_test"};
  const std::filesystem::path& root_ = folder_.path();
};

TEST_F(CliFolder, DecomposeFolderReportsEveryFileThenExitsWithThree) {
  const auto outcome = run({"--server", kNowhere, "decompose", root_.string(), "--recursive", "--json"});
  EXPECT_EQ(outcome.code, 3) << outcome.err;
  EXPECT_TRUE(contains(outcome.err, "FAIL  a.png: UNAVAILABLE")) << outcome.err;
  EXPECT_TRUE(contains(outcome.err, "FAIL  sub/b.jpg: UNAVAILABLE")) << outcome.err;
  EXPECT_FALSE(contains(outcome.err, "notes.txt"));
  EXPECT_TRUE(contains(outcome.out, "\"succeeded\": 0")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "\"failed\": 2")) << outcome.out;
}

TEST_F(CliFolder, IdIsRefusedForAFolder) {
  EXPECT_EQ(run({"--server", kNowhere, "decompose", root_.string(), "--id", "x"}).code, 2);
}

TEST_F(CliFolder, EmptyFolderFails) {
  std::filesystem::create_directories(root_ / "empty");
  const auto outcome = run({"--server", kNowhere, "decompose", (root_ / "empty").string()});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, "no image files")) << outcome.err;
}

TEST_F(CliFolder, RunWithUnreachableServerWritesNothing) {
  const auto out_dir = root_ / "out";
  const auto outcome = run({"--server", kNowhere, "run", root_.string(), "--rank", "4,8", "-o", out_dir.string()});
  EXPECT_EQ(outcome.code, 3) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "files written 0")) << outcome.out;
}

TEST_F(CliFolder, AnUnreadableTlsFileIsALocalFailure) {
  for (const std::vector<std::string>& tls :
       {std::vector<std::string>{"--tls", "--ca", (root_ / "missing-ca.crt").string()},
        {"--cert", (root_ / "missing.crt").string(), "--key", (root_ / "missing.key").string()}}) {
    std::vector<std::string> args{"--server", kNowhere};
    args.insert(args.end(), tls.begin(), tls.end());
    args.push_back("health");
    const auto outcome = run(args);
    EXPECT_EQ(outcome.code, 1) << outcome.err;
    EXPECT_TRUE(contains(outcome.err, "error: cannot open")) << outcome.err;
  }
}

TEST_F(CliFolder, CompressOfAMissingFileIsALocalFailure) {
  const auto outcome =
      run({"--server", kNowhere, "compress", (root_ / "missing.png").string(), "--rank", "4", "-o", "x.png"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, "error: cannot open")) << outcome.err;
}

// Every command that reads a local file fails the same way when it is not there: exit code 1.
TEST_F(CliFolder, AMissingFileIsExitCodeOneForEveryCommand) {
  const std::string missing = (root_ / "missing.png").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"decompose", missing},
        {"run", missing, "--rank", "4", "-o", (root_ / "out").string()},
        {"compress", missing, "--rank", "4", "-o", (root_ / "x.png").string()}}) {
    std::vector<std::string> with_server{"--server", kNowhere};
    with_server.insert(with_server.end(), args.begin(), args.end());
    const auto outcome = run(with_server);
    EXPECT_EQ(outcome.code, 1) << args.front() << ": " << outcome.err;
    EXPECT_TRUE(contains(outcome.err, "missing.png")) << outcome.err;
  }
}

}  // namespace
}  // namespace svdserve::cli
