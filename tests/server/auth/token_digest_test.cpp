#include "server/auth/token_digest.hpp"

#include <gtest/gtest.h>

#include <set>

namespace svdserve {
namespace {

// FIPS 180-2's test vectors, as `printf %s abc | sha256sum` prints them.
constexpr std::string_view kAbcHex =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr std::string_view kEmptyHex =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

TEST(TokenDigest, IsSha256AsSha256sumPrintsIt) {
  EXPECT_EQ(hex_of(digest_of("abc")), kAbcHex);
  EXPECT_EQ(hex_of(digest_of("")), kEmptyHex);
}

TEST(TokenDigest, HexParsesEitherCaseAndNothingElse) {
  const auto lower = parse_digest_hex(kAbcHex);
  ASSERT_TRUE(lower.has_value());
  EXPECT_TRUE(same_digest(*lower, digest_of("abc")));
  std::string upper(kAbcHex);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ASSERT_TRUE(parse_digest_hex(upper).has_value());
  EXPECT_TRUE(same_digest(*parse_digest_hex(upper), *lower));

  EXPECT_FALSE(parse_digest_hex(kAbcHex.substr(1)).has_value());          // 63 digits
  EXPECT_FALSE(parse_digest_hex(std::string(kAbcHex) + "0").has_value());  // 65
  std::string not_hex(kAbcHex);
  not_hex[10] = 'g';
  EXPECT_FALSE(parse_digest_hex(not_hex).has_value());
  EXPECT_FALSE(parse_digest_hex("").has_value());
}

TEST(TokenDigest, SameDigestSeesADifferenceAnywhere) {
  const TokenDigest digest = digest_of("token");
  EXPECT_TRUE(same_digest(digest, digest_of("token")));
  for (const std::size_t at : {std::size_t{0}, std::size_t{15}, kTokenDigestBytes - 1}) {
    TokenDigest other = digest;
    other[at] ^= 1;
    EXPECT_FALSE(same_digest(digest, other)) << "byte " << at;
  }
}

TEST(TokenDigest, RandomTokensAreLongAndDifferent) {
  std::set<std::string> seen;
  for (int i = 0; i < 16; ++i) {
    const std::string token = random_token();
    EXPECT_EQ(token.size(), 2 * kTokenDigestBytes);
    EXPECT_TRUE(seen.insert(token).second);
  }
}

}  // namespace
}  // namespace svdserve
