// The real binaries as a user runs them: svdserve started as a process, svdserve-cli commands
// against it, and SIGTERM ending it cleanly.

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "tests/client/temp_folder.hpp"
#include "tests/test_paths.hpp"
#include "process.hpp"
#include "server_fixture.hpp"

namespace svdserve::testing {
namespace {

namespace fs = std::filesystem;

class BinariesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = free_port();
    server_ = std::make_unique<Process>(
        svdserve::test::server_binary(),
        std::vector<std::string>{"--listen", address(), "--backend", "cpu", "--log-level", "info",
                                 "--config", std::string(svdserve::test::source_dir()) + "/config/svdserve.textproto",
                                 "--data-dir", data_.path().string()});
    ClientOptions options;
    options.wait_for_ready = true;
    options.timeout = std::chrono::seconds(30);
    Client client(address(), options);
    auto health = client.health();
    ASSERT_TRUE(health.ok()) << health.status().error_message();
    ASSERT_EQ(*health, HealthStatus::serving);
    output_ = fs::temp_directory_path() / ("svdserve-cli-test-" + std::to_string(port_));
    fs::create_directories(output_);
  }

  void TearDown() override {
    server_.reset();
    fs::remove_all(output_);
  }

  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  ProcessResult cli(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", address()});
    return run_process(svdserve::test::cli_binary(), args);
  }

  TempFolder data_{"svdserve-binaries-data"};  // the shipped config keeps factors here
  int port_ = 0;
  std::unique_ptr<Process> server_;
  fs::path output_;
};

TEST_F(BinariesTest, CliDrivesTheServerAndSigtermDrainsIt) {
  const std::string images = svdserve::test::test_images_dir();

  auto health = cli({"health"});
  EXPECT_EQ(health.exit_code, 0) << health.err;
  EXPECT_NE(health.out.find("SERVING"), std::string::npos) << health.out;

  auto decompose = cli({"decompose", images, "--max-rank", "32"});
  ASSERT_EQ(decompose.exit_code, 0) << decompose.out << decompose.err;

  const fs::path png = output_ / "baboon_k16.png";
  auto reconstruct = cli({"reconstruct", "baboon.jpg", "--rank", "16", "-o", png.string()});
  ASSERT_EQ(reconstruct.exit_code, 0) << reconstruct.err;
  const cv::Mat written = cv::imread(png.string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(written.empty());
  EXPECT_EQ(written.cols, 512);
  EXPECT_EQ(written.rows, 512);
  EXPECT_EQ(written.channels(), 3);

  const fs::path run_dir = output_ / "run";
  auto run = cli({"run", images + "/fruits.jpg", "--rank", "4,16", "-o", run_dir.string()});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(fs::exists(run_dir / "fruits_k4.png"));
  EXPECT_TRUE(fs::exists(run_dir / "fruits_k16.png"));

  auto missing = cli({"reconstruct", "no-such-image", "--rank", "1", "-o", (output_ / "x.png").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("NOT_FOUND"), std::string::npos) << missing.err;

  for (const char* command : {"list", "stats", "server-info"}) {
    auto answer = cli({command});
    EXPECT_EQ(answer.exit_code, 0) << command << ": " << answer.err;
  }

  const fs::path json = output_ / "bench.json";
  auto bench = cli({"bench", "--op", "reconstruct", "--image", images + "/pic1.png", "--rank", "8",
                    "--concurrency", "2", "--count", "20", "--json", json.string()});
  ASSERT_EQ(bench.exit_code, 0) << bench.out << bench.err;
  const std::string report = read_file_bytes(json.string());
  EXPECT_NE(report.find("images_per_second"), std::string::npos) << report;

  server_->signal(SIGTERM);
  const ProcessResult stopped = server_->wait(std::chrono::seconds(30));
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_NE(stopped.err.find("shutdown: done"), std::string::npos) << stopped.err;
}

// --energy above what the kept triplets hold is answered at the kept rank, and the CLI says so.
TEST_F(BinariesTest, EnergyThatTheKeptRankCannotReachIsNamed) {
  const std::string image = svdserve::test::test_images_dir() + "/baboon.jpg";
  ASSERT_EQ(cli({"decompose", image, "--max-rank", "4"}).exit_code, 0);
  const std::string out = (output_ / "baboon.png").string();

  const auto unreachable = cli({"--json", "reconstruct", "baboon.jpg", "--energy", "0.9999", "-o", out});
  ASSERT_EQ(unreachable.exit_code, 0) << unreachable.err;
  EXPECT_NE(unreachable.err.find("note: --energy 0.9999 is more than the 4 singular triplets kept"),
            std::string::npos)
      << unreachable.err;
  EXPECT_NE(unreachable.out.find("\"energy_met\": false"), std::string::npos) << unreachable.out;
  EXPECT_NE(unreachable.out.find("\"rank\": 4"), std::string::npos) << unreachable.out;

  const auto reachable = cli({"reconstruct", "baboon.jpg", "--energy", "0.5", "-o", out});
  ASSERT_EQ(reachable.exit_code, 0) << reachable.err;
  EXPECT_EQ(reachable.err.find("note:"), std::string::npos) << reachable.err;
}

// A PNG of a rank-k photo is larger than the JPEG it came from: the CLI says why and what to use.
TEST_F(BinariesTest, ACompressedPngLargerThanItsJpegIsExplained) {
  const std::string image = svdserve::test::test_images_dir() + "/baboon.jpg";
  const fs::path png = output_ / "small.png";
  const auto as_png = cli({"compress", image, "--rank", "64", "-o", png.string()});
  ASSERT_EQ(as_png.exit_code, 0) << as_png.err;
  ASSERT_GT(fs::file_size(png), fs::file_size(image));
  EXPECT_NE(as_png.err.find("note: the PNG is larger than baboon.jpg"), std::string::npos) << as_png.err;
  EXPECT_NE(as_png.err.find("write .jpg"), std::string::npos) << as_png.err;

  const fs::path jpeg = output_ / "small.jpg";
  const auto as_jpeg = cli({"compress", image, "--rank", "64", "-o", jpeg.string(), "--jpeg-quality", "75"});
  ASSERT_EQ(as_jpeg.exit_code, 0) << as_jpeg.err;
  EXPECT_EQ(as_jpeg.err.find("note:"), std::string::npos) << as_jpeg.err;
  EXPECT_LT(fs::file_size(jpeg), fs::file_size(image));
}

TEST(CliWithoutServerTest, UnreachableServerExitsWithCode3) {
  const int port = free_port();
  auto result = run_process(svdserve::test::cli_binary(),
                            {"--server", "127.0.0.1:" + std::to_string(port), "--timeout", "2", "list"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("UNAVAILABLE"), std::string::npos) << result.err;
}

TEST(ServerBinaryTest, BadConfigIsRefusedWithExitCode2) {
  auto result = run_process(svdserve::test::server_binary(), {"--max-batch-size", "-3"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("max-batch-size"), std::string::npos) << result.err;
}

TEST(ServerBinaryTest, AConfigFileThatIsNotTextFormatIsNotEchoed) {
  // As --config /etc/shadow would be: the parse error must not hand the file's text to whoever
  // reads the output.
  TempFolder folder("svdserve-config");
  const std::string secret = "hunter2x7f3a9c";
  const fs::path path = folder.path() / "shadow";
  std::ofstream(path) << secret << ":$y$j9T$Zq1bd0Kw$secret-hash:19000:0:99999:7:::\n"
                      << "daemon:*:19000:0:99999:7:::\n";
  const ProcessResult result =
      run_process(svdserve::test::server_binary(), {"--config", path.string()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err.find(secret), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("secret-hash"), std::string::npos) << result.err;
  EXPECT_EQ(result.out.find(secret), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("not a valid"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("line 1"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace svdserve::testing
