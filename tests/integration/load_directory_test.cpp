// LoadDirectory on folders that hold more than image files: FIFOs, symbolic links, files over
// the size limit. Each is skipped with its own status; none blocks the call or the shutdown.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "process.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

namespace fs = std::filesystem;

// What an exit may take beyond the drain timeout (see lifecycle_test.cpp).
constexpr auto kExitSlack = std::chrono::seconds(3);
constexpr auto kProcessBound = std::chrono::seconds(60);

// A folder of its own in the temp folder, removed when the test ends.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& name)
      : path_(fs::temp_directory_path() /
              ("svdserve-load-" + std::to_string(getpid()) + "-" + name)) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  [[nodiscard]] const fs::path& path() const noexcept { return path_; }
  [[nodiscard]] fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

void copy_test_image(const std::string& name, const fs::path& to) {
  fs::copy_file(fs::path(svdserve::test::test_images_dir()) / name, to);
}

void make_fifo(const fs::path& path) { ASSERT_EQ(mkfifo(path.c_str(), 0600), 0) << path; }

// The result for `id`, or an empty one (code 0, no path) when the response has none.
v1::LoadResult result_for(const v1::LoadDirectoryResponse& response, const std::string& id) {
  for (const auto& result : response.results()) {
    if (result.id() == id) return result;
  }
  ADD_FAILURE() << "no result for " << id;
  return {};
}

using LoadDirectoryTest = ServerFixture;

TEST_F(LoadDirectoryTest, FifosAndLinksAreSkippedWithTheirOwnStatus) {
  start();
  ScratchFolder folder("special");
  ScratchFolder outside("outside");
  copy_test_image("pic1.png", folder / "image.png");
  make_fifo(folder / "pipe.png");
  copy_test_image("home.jpg", outside / "secret.jpg");
  fs::create_symlink(outside / "secret.jpg", folder / "link.jpg");

  const auto loaded = client_->load_directory(folder.path().string(), 8);
  ASSERT_TRUE(loaded.ok()) << loaded.status().error_message();
  EXPECT_EQ(loaded->loaded(), 1u);
  EXPECT_EQ(loaded->failed(), 2u);
  EXPECT_EQ(result_for(*loaded, "image.png").status().code(), 0);

  const v1::LoadResult pipe = result_for(*loaded, "pipe.png");
  EXPECT_EQ(pipe.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(pipe.status().message().find("not a regular file"), std::string::npos)
      << pipe.status().message();
  const v1::LoadResult link = result_for(*loaded, "link.jpg");
  EXPECT_EQ(link.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(link.status().message().find("symbolic link"), std::string::npos)
      << link.status().message();
  EXPECT_FALSE(client_->get_image("link.jpg").ok()) << "the link was followed";
}

// The size comes from the file system, before anything is read.
TEST_F(LoadDirectoryTest, FileOverTheSizeLimitIsSkipped) {
  v1::ServerConfig config = test_config();
  config.set_max_image_bytes(1 << 20);
  start(config);
  ScratchFolder folder("huge");
  copy_test_image("pic1.png", folder / "image.png");
  {
    std::ofstream(folder / "huge.png").put('\0');
    fs::resize_file(folder / "huge.png", std::uintmax_t{1} << 30);  // sparse: no disk used
  }

  const auto loaded = client_->load_directory(folder.path().string(), 8);
  ASSERT_TRUE(loaded.ok()) << loaded.status().error_message();
  EXPECT_EQ(loaded->loaded(), 1u);
  const v1::LoadResult huge = result_for(*loaded, "huge.png");
  EXPECT_EQ(huge.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(huge.status().message().find("max_image_bytes"), std::string::npos)
      << huge.status().message();
}

// A FIFO among the images, against the real process: the call answers, then SIGTERM exits.
TEST(LoadDirectoryProcessTest, FifoBlocksNeitherTheCallNorTheExit) {
  constexpr std::chrono::milliseconds kDrainTimeout(5000);
  ScratchFolder folder("fifo-process");
  copy_test_image("pic1.png", folder / "image.png");
  make_fifo(folder / "pipe.png");
  ServerProcess server({"--drain-timeout-ms", std::to_string(kDrainTimeout.count())});
  ASSERT_TRUE(server.serving());

  const auto loaded = server.client().load_directory(folder.path().string(), 8);
  ASSERT_TRUE(loaded.ok()) << loaded.status().error_message();
  EXPECT_EQ(loaded->loaded(), 1u);
  EXPECT_EQ(result_for(*loaded, "pipe.png").status().code(), grpc::StatusCode::INVALID_ARGUMENT);

  const auto sent = std::chrono::steady_clock::now();
  server.process().signal(SIGTERM);
  const ProcessResult result = server.process().wait(kProcessBound);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_LT(std::chrono::steady_clock::now() - sent, kDrainTimeout + kExitSlack);
}

}  // namespace
}  // namespace svdserve::testing
