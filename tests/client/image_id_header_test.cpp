// The routing header's value: printable ids travel unchanged, everything else percent-encoded.

#include "client/image_id_header.hpp"

#include <gtest/gtest.h>

#include <string>

namespace svdserve {
namespace {

TEST(ImageIdHeader, PrintableIdsTravelUnchanged) {
  EXPECT_EQ(image_id_header_value("cat"), "cat");
  EXPECT_EQ(image_id_header_value("holidays/2024/beach-01.png"), "holidays/2024/beach-01.png");
  EXPECT_EQ(image_id_header_value("a!~{}"), "a!~{}");
}

TEST(ImageIdHeader, EmptyIdHasNoValue) { EXPECT_EQ(image_id_header_value(""), ""); }

TEST(ImageIdHeader, IdsLongerThanTheServerTakesHaveNoValue) {
  const std::string longest(kMaxRoutedIdBytes, '\xFF');  // Three times as long once encoded.
  EXPECT_EQ(image_id_header_value(longest).size(), 3 * kMaxRoutedIdBytes);
  EXPECT_EQ(image_id_header_value(longest + "x"), "");
}

TEST(ImageIdHeader, SpacesPercentAndNonAsciiArePercentEncoded) {
  EXPECT_EQ(image_id_header_value("my cat.png"), "my%20cat.png");
  EXPECT_EQ(image_id_header_value("100%"), "100%25");
  EXPECT_EQ(image_id_header_value("caf\xC3\xA9"), "caf%C3%A9");
  EXPECT_EQ(image_id_header_value(std::string("a\0b\x7F", 4)), "a%00b%7F");
}

TEST(ImageIdHeader, EncodingIsOneToOne) {
  // "%20" itself must not collide with a space.
  EXPECT_NE(image_id_header_value("%20"), image_id_header_value(" "));
}

}  // namespace
}  // namespace svdserve
