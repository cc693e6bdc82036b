// LoadRoots on real folders: a request's path is LoadDirectory's only if it names a root or a
// folder below one, reached without a link; everything else is refused before anything outside
// the roots is opened, and no answer names the server's paths.

#include "server/runtime/load_roots.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <future>

#include "kernels/errors.hpp"
#include "tests/client/temp_folder.hpp"
#include "tests/support/thrown_error.hpp"

namespace svdserve {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::Thrown;
using testing::TempFolder;

class LoadRootsTest : public ::testing::Test {
 protected:
  LoadRootsTest()
      : scratch_path_(fs::canonical(scratch_.path())),
        root_(scratch_path_ / "root"),
        outside_(scratch_path_ / "outside") {
    fs::create_directories(root_ / "sub" / "inner");
    fs::create_directories(outside_);
  }

  // Refused with `kind`; the message names neither the scratch folder nor the root, with or
  // without its leading '/'.
  void expect_refused(const LoadRoots& roots, const std::string& path, ErrorKind kind) {
    const Thrown thrown = error_of([&] { (void)roots.open(path); });
    EXPECT_EQ(thrown.kind, kind) << path << ": " << thrown.message;
    EXPECT_EQ(thrown.message.find(scratch_path_.relative_path().string()), std::string::npos)
        << path << ": " << thrown.message;
  }

  TempFolder scratch_{"svdserve-roots"};
  fs::path scratch_path_;
  fs::path root_;
  fs::path outside_;
};

TEST_F(LoadRootsTest, ARootAndTheFoldersBelowItOpen) {
  const LoadRoots roots({root_.string()});
  const LoadRoots::Folder root = roots.open(root_.string());
  EXPECT_EQ(root.below_root, "");
  EXPECT_EQ(root.root->folder_below("").entries().size(), 1u);
  EXPECT_EQ(roots.open(root_.string() + "/").below_root, "");
  EXPECT_EQ(roots.open((root_ / "sub").string()).below_root, "sub");
  EXPECT_EQ(roots.open(root_.string() + "//sub///inner/").below_root, "sub/inner");
}

TEST_F(LoadRootsTest, TheInnermostRootHoldsAPath) {
  const LoadRoots roots({root_.string(), (root_ / "sub").string()});
  EXPECT_EQ(roots.open((root_ / "sub" / "inner").string()).below_root, "inner");
  EXPECT_EQ(roots.open(root_.string()).below_root, "");
}

TEST_F(LoadRootsTest, WithoutRootsEveryPathIsRefused) {
  const LoadRoots roots({});
  EXPECT_TRUE(roots.empty());
  for (const std::string& path : {root_.string(), std::string("/"), std::string("")}) {
    const Thrown thrown = error_of([&] { (void)roots.open(path); });
    EXPECT_EQ(thrown.kind, ErrorKind::permission_denied) << path;
    EXPECT_NE(thrown.message.find("no load roots configured"), std::string::npos) << thrown.message;
    EXPECT_NE(thrown.message.find("--load-root"), std::string::npos) << thrown.message;
  }
}

TEST_F(LoadRootsTest, PathsOutsideEveryRootAreRefused) {
  const LoadRoots roots({root_.string()});
  for (const std::string& path :
       {outside_.string(), scratch_path_.string(), std::string("/"), std::string("/proc"),
        std::string("/proc/self/root"), std::string("/dev/null"), std::string("/etc"),
        root_.string() + "-sibling",  // the root's name is a prefix of it, but no root holds it
        (root_ / "sub" / ".." / ".." / "outside").string(), (root_ / "..").string(),
        (root_ / "." / "sub").string(), std::string("sub"), std::string("../outside"),
        std::string("./sub"), root_.string() + std::string("\0/../outside", 12)}) {
    expect_refused(roots, path, ErrorKind::permission_denied);
  }
  EXPECT_EQ(error_of([&] { (void)roots.open(""); }).kind, ErrorKind::invalid_argument);
}

TEST_F(LoadRootsTest, ALinkOutOfTheRootIsRefused) {
  fs::create_directory_symlink(outside_, root_ / "sub" / "out");
  fs::create_directory_symlink("/proc", root_ / "proc");
  const LoadRoots roots({root_.string()});
  expect_refused(roots, (root_ / "sub" / "out").string(), ErrorKind::permission_denied);
  expect_refused(roots, (root_ / "sub" / "out" / "deeper").string(),
                 ErrorKind::permission_denied);
  expect_refused(roots, (root_ / "proc" / "self").string(), ErrorKind::permission_denied);
}

TEST_F(LoadRootsTest, MissingFoldersAndFifosAreNotFound) {
  ASSERT_EQ(mkfifo((root_ / "pipe").c_str(), 0600), 0);
  const LoadRoots roots({root_.string()});
  expect_refused(roots, (root_ / "nothing").string(), ErrorKind::not_found);
  auto opening = std::async(std::launch::async, [&] {
    expect_refused(roots, (root_ / "pipe").string(), ErrorKind::not_found);
  });
  ASSERT_EQ(opening.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "opening a FIFO as a folder waited for a writer";
}

// A root is checked at start, and opened without following a link by every request: one replaced
// by a link later is refused too.
TEST_F(LoadRootsTest, ARootThatIsALinkIsRefused) {
  const fs::path link = scratch_path_ / "root-link";
  fs::create_directory_symlink(root_, link);
  const auto problem = load_root_problem(link.string());
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("symbolic link"), std::string::npos) << *problem;
  std::string named = "'";
  named += root_.string();
  named += "'";
  EXPECT_NE(problem->find(named), std::string::npos)
      << "the admin is told the folder's own path: " << *problem;
  EXPECT_THROW(LoadRoots({link.string()}), InvalidArgument);

  const fs::path moved = scratch_path_ / "moved";
  const LoadRoots roots({root_.string()});
  fs::rename(root_, moved);
  fs::create_directory_symlink(moved, root_);
  expect_refused(roots, root_.string(), ErrorKind::permission_denied);
  expect_refused(roots, (root_ / "sub").string(), ErrorKind::permission_denied);
}

TEST_F(LoadRootsTest, ARootMustBeTheAbsolutePathOfAnExistingFolder) {
  std::ofstream(scratch_path_ / "file") << "x";
  EXPECT_FALSE(load_root_problem(root_.string()).has_value());
  EXPECT_FALSE(load_root_problem(root_.string() + "/").has_value());
  for (const std::string& root :
       {std::string("relative/folder"), std::string(""), (scratch_path_ / "missing").string(),
        (scratch_path_ / "file").string(), (root_ / "sub" / "..").string(),
        (root_ / "." / "sub").string()}) {
    EXPECT_TRUE(load_root_problem(root).has_value()) << root;
  }
}

}  // namespace
}  // namespace svdserve
