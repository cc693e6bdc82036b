// LoadDirectory over real gRPC, on real folders: only a load root and the folders below it are
// read; a path outside every root, with '..' in it or through a link is refused before anything
// is opened; links, FIFOs and files over the size limit inside are skipped with their own status,
// none blocks the call or the shutdown; and no answer names the server's absolute paths.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "process.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"
#include "tests/client/temp_folder.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

namespace fs = std::filesystem;

// What an exit may take beyond the drain timeout (see lifecycle_test.cpp).
constexpr auto kExitSlack = std::chrono::seconds(3);
constexpr auto kProcessBound = std::chrono::seconds(60);
constexpr int kExitBadConfig = 2;

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

// A scratch folder holding the load root ("root") and a folder outside it ("outside", with an
// image in it that must never be loaded), by their canonical paths.
class LoadDirectoryTest : public ServerFixture {
 protected:
  LoadDirectoryTest()
      : scratch_path_(fs::canonical(scratch_.path())),
        root_(scratch_path_ / "root"),
        outside_(scratch_path_ / "outside") {
    fs::create_directories(root_);
    fs::create_directories(outside_);
    copy_test_image("home.jpg", outside_ / "secret.jpg");
  }

  void start_with_root(v1::ServerConfig config = test_config()) {
    config.add_load_roots(root_.string());
    start(config);
  }

  // Neither the answer nor its status names the scratch folder, with or without its leading '/'.
  void expect_no_server_path(const CallResult<v1::LoadDirectoryResponse>& answer) const {
    const std::string scratch = scratch_path_.relative_path().string();
    EXPECT_EQ(answer.status().error_message().find(scratch), std::string::npos)
        << answer.status().error_message();
    if (answer.ok()) {
      EXPECT_EQ(answer->DebugString().find(scratch), std::string::npos) << answer->DebugString();
    }
  }

  // Refused with `code` before anything was loaded.
  void expect_refused(const std::string& path, grpc::StatusCode code) {
    SCOPED_TRACE(path);
    const auto answer = client_->load_directory(path, 8, /*recursive=*/true);
    EXPECT_EQ(answer.status().error_code(), code) << answer.status().error_message();
    expect_no_server_path(answer);
    const auto listed = client_->list_images();
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ(listed->images_size(), 0) << "something was loaded";
  }

  TempFolder scratch_{"svdserve-load"};
  fs::path scratch_path_;
  fs::path root_;
  fs::path outside_;
};

TEST_F(LoadDirectoryTest, WithoutLoadRootsEveryPathIsRefused) {
  start();
  copy_test_image("pic1.png", root_ / "image.png");
  const auto answer = client_->load_directory(root_.string(), 8);
  EXPECT_EQ(answer.status().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(answer.status().error_message().find("no load roots configured"), std::string::npos)
      << answer.status().error_message();
  EXPECT_NE(answer.status().error_message().find("--load-root"), std::string::npos);
  expect_no_server_path(answer);
}

TEST_F(LoadDirectoryTest, IdsArePathsBelowTheRoot) {
  start_with_root();
  fs::create_directories(root_ / "sub" / "deeper");
  copy_test_image("pic1.png", root_ / "top.png");
  copy_test_image("pic1.png", root_ / "sub" / "a.png");
  copy_test_image("gradient.png", root_ / "sub" / "deeper" / "b.png");

  const auto all = client_->load_directory(root_.string() + "/", 8, /*recursive=*/true);
  ASSERT_TRUE(all.ok()) << all.status().error_message();
  EXPECT_EQ(all->loaded(), 3u);
  std::vector<std::string> ids;
  for (const auto& result : all->results()) {
    ids.push_back(result.id());
    EXPECT_EQ(result.path(), result.id());
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"sub/a.png", "sub/deeper/b.png", "top.png"}));
  expect_no_server_path(all);
  EXPECT_TRUE(client_->get_image("sub/deeper/b.png").ok());

  // A folder below the root: the same ids for the same files.
  const auto sub = client_->load_directory((root_ / "sub").string(), 8, /*recursive=*/false);
  ASSERT_TRUE(sub.ok()) << sub.status().error_message();
  ASSERT_EQ(sub->results_size(), 1);
  EXPECT_EQ(sub->results(0).id(), "sub/a.png");
  EXPECT_EQ(sub->results(0).status().code(), 0);
}

TEST_F(LoadDirectoryTest, PathsOutsideTheRootsAreRefusedUnread) {
  fs::create_directories(root_ / "sub");
  copy_test_image("pic1.png", root_ / "sub" / "image.png");
  fs::create_directory_symlink(outside_, root_ / "out");
  fs::create_directory_symlink("/proc", root_ / "proc");
  fs::create_directories(root_.string() + "-sibling");
  copy_test_image("pic1.png", fs::path(root_.string() + "-sibling") / "image.png");
  start_with_root();

  for (const std::string& path :
       {outside_.string(), scratch_path_.string(), root_.string() + "-sibling",
        (root_ / ".." / "outside").string(), (root_ / "sub" / ".." / "..").string(),
        (root_ / "." / "sub").string(), std::string("sub"), std::string("../outside"),
        std::string("/"), std::string("/proc"), std::string("/proc/self/root"),
        std::string("/dev/null"), std::string("/etc"), (root_ / "out").string(),
        (root_ / "out" / "deeper").string(), (root_ / "proc" / "self").string()}) {
    expect_refused(path, grpc::StatusCode::PERMISSION_DENIED);
  }
  expect_refused((root_ / "missing").string(), grpc::StatusCode::NOT_FOUND);
  expect_refused((root_ / "sub" / "image.png").string(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(LoadDirectoryTest, FifosAndLinksInsideAreSkippedWithTheirOwnStatus) {
  start_with_root();
  copy_test_image("pic1.png", root_ / "image.png");
  make_fifo(root_ / "pipe.png");
  fs::create_symlink(outside_ / "secret.jpg", root_ / "link.jpg");
  fs::create_directory_symlink(outside_, root_ / "linked-folder");

  const auto loaded = client_->load_directory(root_.string(), 8, /*recursive=*/true);
  ASSERT_TRUE(loaded.ok()) << loaded.status().error_message();
  EXPECT_EQ(loaded->loaded(), 1u);
  EXPECT_EQ(loaded->failed(), 2u);
  EXPECT_EQ(loaded->results_size(), 3) << "a linked folder was walked";
  EXPECT_EQ(result_for(*loaded, "image.png").status().code(), 0);
  expect_no_server_path(loaded);

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

// A root is opened without following a link by every call: one swapped for a link is refused.
TEST_F(LoadDirectoryTest, ARootReplacedByALinkIsRefused) {
  copy_test_image("pic1.png", root_ / "image.png");
  start_with_root();
  fs::rename(root_, scratch_path_ / "moved");
  fs::create_directory_symlink(scratch_path_ / "moved", root_);
  expect_refused(root_.string(), grpc::StatusCode::PERMISSION_DENIED);
}

// The size comes from the file system, before anything is read.
TEST_F(LoadDirectoryTest, FileOverTheSizeLimitIsSkipped) {
  v1::ServerConfig config = test_config();
  config.set_max_image_bytes(1 << 20);
  start_with_root(config);
  copy_test_image("pic1.png", root_ / "image.png");
  {
    std::ofstream(root_ / "huge.png").put('\0');
    fs::resize_file(root_ / "huge.png", std::uintmax_t{1} << 30);  // sparse: no disk used
  }

  const auto loaded = client_->load_directory(root_.string(), 8);
  ASSERT_TRUE(loaded.ok()) << loaded.status().error_message();
  EXPECT_EQ(loaded->loaded(), 1u);
  const v1::LoadResult huge = result_for(*loaded, "huge.png");
  EXPECT_EQ(huge.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(huge.status().message().find("max_image_bytes"), std::string::npos)
      << huge.status().message();
}

// The real binary: no roots, no LoadDirectory; --load-root DIR, ids below DIR.
TEST(LoadDirectoryProcessTest, OnlyTheConfiguredRootIsLoaded) {
  const TempFolder scratch("svdserve-load-process");
  const fs::path root = fs::canonical(scratch.path());
  fs::create_directories(root / "sub");
  copy_test_image("pic1.png", root / "sub" / "image.png");

  ServerProcess without_roots({"--log-level", "warn"});
  ASSERT_TRUE(without_roots.serving());
  const auto refused = without_roots.client().load_directory(root.string(), 8);
  EXPECT_EQ(refused.status().error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << refused.status().error_message();

  ServerProcess with_root({"--log-level", "warn", "--load-root", root.string()});
  ASSERT_TRUE(with_root.serving());
  const auto loaded = with_root.client().load_directory(root.string(), 8, /*recursive=*/true);
  ASSERT_TRUE(loaded.ok()) << loaded.status().error_message();
  ASSERT_EQ(loaded->results_size(), 1);
  EXPECT_EQ(loaded->results(0).id(), "sub/image.png");
  EXPECT_EQ(loaded->results(0).path(), "sub/image.png");
  EXPECT_EQ(loaded->loaded(), 1u);
  EXPECT_EQ(with_root.client().load_directory("/etc", 8).status().error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

// The admin is told at start, and told the path to name instead.
TEST(LoadDirectoryProcessTest, ARootThatIsALinkStopsTheStart) {
  const TempFolder scratch("svdserve-load-link");
  const fs::path real = fs::canonical(scratch.path()) / "real";
  fs::create_directories(real);
  fs::create_directory_symlink(real, fs::canonical(scratch.path()) / "link");
  const ProcessResult result =
      run_process(svdserve::test::server_binary(),
                  {"--listen", "127.0.0.1:0", "--backend", "cpu", "--load-root",
                   (fs::canonical(scratch.path()) / "link").string()},
                  kProcessBound);
  EXPECT_EQ(result.exit_code, kExitBadConfig) << result.err;
  EXPECT_NE(result.err.find("symbolic link"), std::string::npos) << result.err;
  std::string named = "'";
  named += real.string();
  named += "'";
  EXPECT_NE(result.err.find(named), std::string::npos) << result.err;
}

// A FIFO among the images, against the real process: the call answers, then SIGTERM exits.
TEST(LoadDirectoryProcessTest, FifoBlocksNeitherTheCallNorTheExit) {
  constexpr std::chrono::milliseconds kDrainTimeout(5000);
  const TempFolder scratch("svdserve-load-fifo");
  const fs::path folder = fs::canonical(scratch.path());
  copy_test_image("pic1.png", folder / "image.png");
  make_fifo(folder / "pipe.png");
  ServerProcess server({"--drain-timeout-ms", std::to_string(kDrainTimeout.count()),
                        "--load-root", folder.string()});
  ASSERT_TRUE(server.serving());

  const auto loaded = server.client().load_directory(folder.string(), 8);
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
