#include "server/auth/token_file_watch.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

using std::chrono::milliseconds;

// Look at the file on every call: what a change does is seen at once, with nothing to wait for.
constexpr milliseconds kEveryCall{0};

std::string line_of(std::string_view token, std::string_view role, std::string_view name) {
  return "sha256:" + hex_of(digest_of(token)) + " " + std::string(role) + " " +
         std::string(name) + "\n";
}

class TokenFileWatchTest : public ::testing::Test {
 protected:
  void TearDown() override {
    std::filesystem::remove(path_);
    std::filesystem::remove(path_ + ".new");
  }
  // Written beside the file and renamed over it, as the README says to replace it.
  void replace_file(const std::string& text) {
    std::ofstream(path_ + ".new") << text;
    std::filesystem::rename(path_ + ".new", path_);
  }
  [[nodiscard]] static bool knows(TokenFileWatch& watch, std::string_view token) {
    return watch.current()->find(digest_of(token)) != nullptr;
  }
  std::string path_ = (std::filesystem::temp_directory_path() /
                       ("svdserve-token-watch-test-" + std::to_string(::getpid())))
                          .string();
};

TEST_F(TokenFileWatchTest, ABadFileAtStartIsRefused) {
  EXPECT_THROW(TokenFileWatch(path_, kEveryCall), InvalidArgument);  // missing
  replace_file(line_of("a", "read", "a") + "sha256:00 read b\n");
  try {
    TokenFileWatch watch(path_, kEveryCall);
    FAIL() << "accepted a bad file";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

TEST_F(TokenFileWatchTest, TokensAddedAndRevokedApplyOnTheNextLook) {
  replace_file(line_of("old", "read", "old"));
  TokenFileWatch watch(path_, kEveryCall);
  EXPECT_TRUE(knows(watch, "old"));
  EXPECT_FALSE(knows(watch, "new"));

  replace_file(line_of("old", "read", "old") + line_of("new", "write", "new"));
  EXPECT_TRUE(knows(watch, "new"));
  EXPECT_TRUE(knows(watch, "old"));

  replace_file(line_of("new", "write", "new"));  // old revoked
  EXPECT_FALSE(knows(watch, "old"));
  EXPECT_TRUE(knows(watch, "new"));

  // Edited in place (same inode) rather than replaced.
  std::ofstream(path_, std::ios::app) << line_of("third", "admin", "third");
  EXPECT_TRUE(knows(watch, "third"));
}

TEST_F(TokenFileWatchTest, ABrokenOrMissingVersionKeepsTheTokensThatWere) {
  replace_file(line_of("kept", "read", "kept"));
  TokenFileWatch watch(path_, kEveryCall);
  replace_file(line_of("kept", "read", "kept") + "half-written line\n");
  EXPECT_TRUE(knows(watch, "kept"));
  std::filesystem::remove(path_);
  EXPECT_TRUE(knows(watch, "kept"));
  replace_file(line_of("back", "read", "back"));
  EXPECT_TRUE(knows(watch, "back"));
  EXPECT_FALSE(knows(watch, "kept"));
}

TEST_F(TokenFileWatchTest, TheFileIsLookedAtAtMostOncePerInterval) {
  replace_file(line_of("first", "read", "first"));
  TokenFileWatch watch(path_, std::chrono::hours(1));
  replace_file(line_of("second", "read", "second"));
  // Within the hour the calls use what was read at the start.
  EXPECT_TRUE(knows(watch, "first"));
  EXPECT_FALSE(knows(watch, "second"));
}

}  // namespace
}  // namespace svdserve
