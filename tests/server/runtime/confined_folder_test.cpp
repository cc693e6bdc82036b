// ConfinedFolder on real folders: names are opened one at a time below the folder, and a link, a
// '..' or something that is not a folder on the way is refused without being followed or opened.

#include "server/runtime/confined_folder.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
#include <optional>

#include "kernels/errors.hpp"
#include "tests/client/temp_folder.hpp"
#include "tests/support/thrown_error.hpp"

namespace svdserve {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::Thrown;
using testing::TempFolder;

class ConfinedFolderTest : public ::testing::Test {
 protected:
  ConfinedFolderTest() : root_(fs::canonical(scratch_.path()) / "root") {
    fs::create_directories(root_ / "sub" / "inner");
    fs::create_directories(scratch_.path() / "outside");
    std::ofstream(scratch_.path() / "outside" / "secret.png") << "secret";
    std::ofstream(root_ / "sub" / "a.png") << "image";
  }

  TempFolder scratch_{"svdserve-confined"};
  fs::path root_;
};

TEST_F(ConfinedFolderTest, OpensFoldersBelowNameByNameAndListsTheirEntries) {
  const ConfinedFolder root = ConfinedFolder::open_absolute(root_.string());
  const ConfinedFolder sub = root.folder_below("sub");
  std::vector<ConfinedFolder::Entry> entries = sub.entries();
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "a.png");
  EXPECT_EQ(entries[0].type, fs::file_type::regular);
  EXPECT_EQ(entries[1].name, "inner");
  EXPECT_EQ(entries[1].type, fs::file_type::directory);

  // Doubled and trailing slashes are one; "" is the folder itself.
  EXPECT_TRUE(root.folder_below("sub//inner/").entries().empty());
  EXPECT_EQ(root.folder_below("").entries().size(), 1u);
  // The folder outlives the one it was opened from.
  const ConfinedFolder inner = ConfinedFolder::open_absolute(root_.string()).folder_below("sub/inner");
  EXPECT_TRUE(inner.entries().empty());
}

TEST_F(ConfinedFolderTest, ALinkOnTheWayIsRefusedNotFollowed) {
  fs::create_directory_symlink(scratch_.path() / "outside", root_ / "sub" / "out");
  const ConfinedFolder root = ConfinedFolder::open_absolute(root_.string());
  for (const char* path : {"sub/out", "sub/out/", "sub/out/deeper"}) {
    const Thrown thrown = error_of([&] { (void)root.folder_below(path); });
    EXPECT_EQ(thrown.kind, ErrorKind::permission_denied) << path;
    EXPECT_EQ(thrown.message, "'sub/out' is a symbolic link (links are not followed)") << path;
  }
  // The link is listed as what it is.
  const auto entries = root.folder_below("sub").entries();
  EXPECT_TRUE(std::any_of(entries.begin(), entries.end(), [](const auto& entry) {
    return entry.name == "out" && entry.type == fs::file_type::symlink;
  }));
}

TEST_F(ConfinedFolderTest, DotAndDotDotAreRefused) {
  const ConfinedFolder root = ConfinedFolder::open_absolute(root_.string());
  for (const char* path : {"..", "../outside", "sub/../..", "sub/..", "./sub", "sub/."}) {
    const Thrown thrown = error_of([&] { (void)root.folder_below(path); });
    EXPECT_EQ(thrown.kind, ErrorKind::permission_denied) << path;
    EXPECT_NE(thrown.message.find("'.' and '..' are not allowed"), std::string::npos)
        << thrown.message;
  }
  const Thrown nul = error_of([&] { (void)root.folder_below(std::string("sub\0/..", 7)); });
  EXPECT_EQ(nul.kind, ErrorKind::permission_denied);
}

TEST_F(ConfinedFolderTest, MissingFilesAndFifosAreNotFolders) {
  ASSERT_EQ(mkfifo((root_ / "pipe").c_str(), 0600), 0);
  const ConfinedFolder root = ConfinedFolder::open_absolute(root_.string());
  EXPECT_EQ(error_of([&] { (void)root.folder_below("sub/nothing"); }).message,
            "'sub/nothing' does not exist");
  EXPECT_EQ(error_of([&] { (void)root.folder_below("sub/a.png/x"); }).message,
            "'sub/a.png' is not a folder");
  // Opening a FIFO for reading waits for a writer; a folder walk must not.
  auto opening = std::async(std::launch::async, [&] {
    return error_of([&] { (void)root.folder_below("pipe"); });
  });
  ASSERT_EQ(opening.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "opening a FIFO as a folder waited for a writer";
  const Thrown fifo = opening.get();
  EXPECT_EQ(fifo.kind, ErrorKind::not_found);
  EXPECT_EQ(fifo.message, "'pipe' is not a folder");
}

// A message quotes a client's path, but not all of a long one.
TEST_F(ConfinedFolderTest, ALongPathIsQuotedInPart) {
  const ConfinedFolder root = ConfinedFolder::open_absolute(root_.string());
  const std::string long_name(10 * 1024, 'x');
  const Thrown thrown = error_of([&] { (void)root.folder_below("sub/" + long_name); });
  EXPECT_EQ(thrown.kind, ErrorKind::not_found);
  EXPECT_LT(thrown.message.size(), 400u) << thrown.message.substr(0, 400);
  EXPECT_NE(thrown.message.find("…' cannot be opened: File name too long"), std::string::npos)
      << thrown.message.substr(0, 400);
}

TEST_F(ConfinedFolderTest, AnAbsolutePathWithALinkInItIsRefused) {
  fs::create_directory_symlink(root_, scratch_.path() / "root-link");
  const fs::path through_link = fs::canonical(scratch_.path()) / "root-link";
  EXPECT_EQ(error_of([&] { (void)ConfinedFolder::open_absolute(through_link.string()); }).kind,
            ErrorKind::permission_denied);
  EXPECT_EQ(
      error_of([&] { (void)ConfinedFolder::open_absolute((through_link / "sub").string()); }).kind,
      ErrorKind::permission_denied);
  EXPECT_EQ(error_of([&] { (void)ConfinedFolder::open_absolute("relative/path"); }).kind,
            ErrorKind::invalid_argument);
}

}  // namespace
}  // namespace svdserve
