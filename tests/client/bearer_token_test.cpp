#include "client/bearer_token.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <stdexcept>

#include "temp_folder.hpp"

namespace svdserve {
namespace {

TEST(BearerToken, HashFieldIsSha256AsSha256sumPrintsIt) {
  // FIPS 180-2's vector: printf %s abc | sha256sum
  EXPECT_EQ(token_hash_field("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(BearerToken, NewTokensAreBase64UrlOf32RandomBytes) {
  std::set<std::string> seen;
  for (int i = 0; i < 32; ++i) {
    const std::string token = new_bearer_token();
    EXPECT_EQ(token.size(), 43U) << token;  // 32 bytes, unpadded
    EXPECT_EQ(token.find_first_not_of(
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos)
        << token;
    EXPECT_TRUE(seen.insert(token).second);
  }
}

TEST(BearerToken, AFilesFirstLineTrimmedIsTheToken) {
  testing::TempFolder folder("svdserve_bearer_token");
  const std::string path = (folder.path() / "token").string();
  std::ofstream(path) << "  s3cret-value \t\r\nsecond line\n";
  EXPECT_EQ(read_bearer_token_file(path), "s3cret-value");

  std::ofstream(path) << "\n";
  try {
    (void)read_bearer_token_file(path);
    FAIL() << "an empty first line was a token";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no token"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)read_bearer_token_file(path + ".missing"), std::runtime_error);
}

}  // namespace
}  // namespace svdserve
