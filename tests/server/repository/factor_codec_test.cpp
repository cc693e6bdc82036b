// The factor encoding: what is written reads back bit for bit, and every damaged form a crash or
// a disk can leave (truncated, torn, a flipped bit, another version) is refused, never decoded.
#include "server/repository/factor_codec.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "kernels/factors.hpp"

namespace svdserve {
namespace {

HostFactors random_factors(ImageShape shape, uint32_t rank, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal;
  HostFactors factors{.shape = shape, .rank_kept = rank, .energy = 1234.5, .u = {},
                      .singular_values = {}, .vt = {}};
  for (uint32_t c = 0; c < shape.channels; ++c) {
    std::vector<float> u(std::size_t{shape.height} * rank), s(rank), vt(std::size_t{rank} * shape.width);
    for (float& value : u) value = normal(random);
    for (uint32_t k = 0; k < rank; ++k) s[k] = static_cast<float>(rank - k) * 10.0f;
    for (float& value : vt) value = normal(random);
    factors.u.push_back(std::move(u));
    factors.singular_values.push_back(std::move(s));
    factors.vt.push_back(std::move(vt));
  }
  return factors;
}

TEST(FactorCodecTest, RoundTripsEveryValueAndTheHeader) {
  const HostFactors factors = random_factors({37, 21, 3}, 9, 1);
  const std::string encoded = encode_factors("tenant/photo.jpg", factors, 1'700'000'000'123);
  EXPECT_EQ(encoded.size(), kCodecHeaderBytes + 16 + factor_bytes_f32({37, 21, 3}, 9));

  const DecodedEntry entry = decode_factors(encoded);
  EXPECT_EQ(entry.head.id, "tenant/photo.jpg");
  EXPECT_EQ(entry.head.shape, (ImageShape{37, 21, 3}));
  EXPECT_EQ(entry.head.rank_kept, 9u);
  EXPECT_EQ(entry.head.written_unix_ms, 1'700'000'000'123);
  EXPECT_EQ(entry.head.total_bytes, encoded.size());
  EXPECT_EQ(entry.factors.energy, 1234.5);
  EXPECT_EQ(entry.factors.u, factors.u);
  EXPECT_EQ(entry.factors.singular_values, factors.singular_values);
  EXPECT_EQ(entry.factors.vt, factors.vt);
}

TEST(FactorCodecTest, HeadIsReadFromThePrefixAScanFetches) {
  const std::string encoded = encode_factors("a", random_factors({300, 200, 1}, 20, 2), 5);
  const EntryHead head = decode_head(std::string_view(encoded).substr(0, kIndexPrefixBytes));
  EXPECT_EQ(head.id, "a");
  EXPECT_EQ(head.shape, (ImageShape{300, 200, 1}));
  EXPECT_EQ(head.total_bytes, encoded.size());
}

TEST(FactorCodecTest, EveryTruncationIsRefused) {
  const std::string encoded = encode_factors("id", random_factors({9, 7, 3}, 4, 3), 0);
  for (std::size_t length = 0; length < encoded.size(); ++length) {
    EXPECT_THROW((void)decode_factors(std::string_view(encoded).substr(0, length)), CorruptEntry)
        << "length " << length;
  }
  std::string longer = encoded + "x";
  EXPECT_THROW((void)decode_factors(longer), CorruptEntry);
}

TEST(FactorCodecTest, EveryFlippedBitIsRefused) {
  const std::string encoded = encode_factors("id", random_factors({6, 5, 1}, 3, 4), 77);
  for (std::size_t byte = 0; byte < encoded.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string damaged = encoded;
      damaged[byte] = static_cast<char>(damaged[byte] ^ (1 << bit));
      EXPECT_THROW((void)decode_factors(damaged), CorruptEntry) << "byte " << byte << " bit " << bit;
    }
  }
}

TEST(FactorCodecTest, AnotherVersionOrNoMagicIsRefusedWithWhy) {
  std::string encoded = encode_factors("id", random_factors({4, 4, 1}, 2, 5), 0);
  std::string other_version = encoded;
  other_version[4] = 2;
  try {
    (void)decode_head(other_version);
    FAIL() << "version 2 was read";
  } catch (const CorruptEntry& error) {
    EXPECT_NE(std::string(error.what()).find("version 2"), std::string::npos) << error.what();
  }
  EXPECT_THROW((void)decode_head("PNG\r\n\x1a\n" + std::string(100, '\0')), CorruptEntry);
  EXPECT_THROW((void)decode_head(""), CorruptEntry);
}

TEST(FactorCodecTest, HeaderWhoseSizesDisagreeWithTheShapeIsRefused) {
  std::string encoded = encode_factors("id", random_factors({4, 4, 1}, 2, 6), 0);
  uint32_t rank_past_the_shape = 5;  // rank_kept at offset 20
  std::memcpy(encoded.data() + 20, &rank_past_the_shape, sizeof(uint32_t));
  EXPECT_THROW((void)decode_head(encoded), CorruptEntry);
}

}  // namespace
}  // namespace svdserve
