#include "server/auth/token_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

// The hash field of a token, as the token file holds it.
std::string field_of(std::string_view token) { return "sha256:" + hex_of(digest_of(token)); }

// What parse_token_file refused `text` with; fails the test when it was accepted.
std::string refusal(const std::string& text) {
  try {
    (void)parse_token_file(text);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted:\n" << text;
  return {};
}

TEST(TokenFile, ReadsRolesNamesAndNamespaces) {
  const std::string text = "# svdserve tokens\n"
                           "\n" +
                           field_of("r") + " read reader\n" +
                           "   " + field_of("w") + "\twrite  ci-writer.2   # rotated monthly\n" +
                           field_of("a") + " admin ops\r\n" +
                           field_of("t") + " write tenant_a tenant-a/\n" +
                           "  # indented comment\n";
  const std::vector<TokenEntry> entries = parse_token_file(text);
  ASSERT_EQ(entries.size(), 4U);
  EXPECT_TRUE(same_digest(entries[0].digest, digest_of("r")));
  EXPECT_EQ(entries[0].role, Role::read);
  EXPECT_EQ(entries[0].name, "reader");
  EXPECT_EQ(entries[0].id_prefix, "");
  EXPECT_EQ(entries[0].line, 3U);
  EXPECT_EQ(entries[1].role, Role::write);
  EXPECT_EQ(entries[1].name, "ci-writer.2");
  EXPECT_EQ(entries[1].line, 4U);
  EXPECT_EQ(entries[2].role, Role::admin);
  EXPECT_EQ(entries[2].name, "ops");  // the \r of a CRLF file is not part of it
  EXPECT_EQ(entries[3].id_prefix, "tenant-a/");
  EXPECT_EQ(entries[3].line, 6U);
}

TEST(TokenFile, EmptyAndCommentOnlyFilesHoldNoTokens) {
  EXPECT_TRUE(parse_token_file("").empty());
  EXPECT_TRUE(parse_token_file("# nobody yet\n\n   \n").empty());
}

struct BadLine {
  std::string name;
  std::string line;       // the second line of the file; the first is good
  std::string complaint;  // part of the message
};

class TokenFileBadLine : public ::testing::TestWithParam<BadLine> {};

// Every kind of bad line is refused with its line number and what to fix, and never with its
// text: a token pasted in by mistake must not reach a log or a terminal.
TEST_P(TokenFileBadLine, NamesTheLineNeverItsText) {
  const std::string text =
      "# tokens\n" + field_of("good") + " read good\n" + GetParam().line + "\n";
  const std::string message = refusal(text);
  EXPECT_TRUE(message.starts_with("line 3: ")) << message;
  EXPECT_NE(message.find(GetParam().complaint), std::string::npos) << message;
  EXPECT_EQ(message.find("s3cret"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, TokenFileBadLine,
    ::testing::Values(
        BadLine{"TooFewFields", field_of("x") + " read", "found 2 fields"},
        BadLine{"TheTokenItself", "s3cret-token-value read someone", "hashes, never tokens"},
        BadLine{"TooManyFields", field_of("x") + " read a ns/ s3cret", "found 5 fields"},
        BadLine{"NoSha256Prefix", hex_of(digest_of("x")) + " read a", "sha256:"},
        BadLine{"OtherAlgorithm", "md5:" + hex_of(digest_of("x")) + " read a", "sha256:"},
        BadLine{"ShortHash", field_of("x").substr(0, 70) + " read a", "64 hex digits"},
        BadLine{"NotHex", "sha256:" + std::string(64, 'z') + " read a", "64 hex digits"},
        BadLine{"UnknownRole", field_of("x") + " s3cret a", "read, write or admin"},
        BadLine{"RoleInCapitals", field_of("x") + " READ a", "read, write or admin"},
        BadLine{"NameWithOtherCharacters", field_of("x") + " read s3cret!", "name"},
        BadLine{"NameTooLong", field_of("x") + " read " + std::string(65, 'n'), "name"},
        BadLine{"NamespaceWithOtherCharacters", field_of("x") + " read a s3cret*", "namespace"},
        BadLine{"NamespaceTooLong", field_of("x") + " read a " + std::string(129, 'n'),
                "namespace"},
        BadLine{"SameTokenTwice", field_of("good") + " admin other", "same token as line 2"}),
    [](const auto& test_info) { return test_info.param.name; });

// A temporary token file, removed when the test ends.
class TokenFileOnDisk : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_ = (std::filesystem::temp_directory_path() /
                       ("svdserve-token-file-test-" + std::to_string(::getpid())))
                          .string();
};

TEST_F(TokenFileOnDisk, ReadsAFileAndNamesItInErrors) {
  std::ofstream(path_) << field_of("a") << " admin ops\n";
  ASSERT_EQ(read_token_file(path_).size(), 1U);

  std::ofstream(path_) << "\n" << field_of("a") << " root ops\n";
  try {
    (void)read_token_file(path_);
    FAIL() << "accepted a bad role";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(path_ + "', line 2: "), std::string::npos) << e.what();
  }
}

TEST_F(TokenFileOnDisk, AMissingHugeOrIrregularFileIsRefused) {
  EXPECT_THROW((void)read_token_file(path_), InvalidArgument);
  try {
    (void)read_token_file("/dev/zero");  // would never end
    FAIL() << "read a device";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  std::ofstream(path_) << std::string(kMaxTokenFileBytes + 1, '#');
  try {
    (void)read_token_file(path_);
    FAIL() << "read a file over the limit";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("is over"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace svdserve
