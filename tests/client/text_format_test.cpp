#include "client/text_format.hpp"

#include <gtest/gtest.h>

namespace svdserve {
namespace {

TEST(TextFormat, BytesInBinaryUnits) {
  EXPECT_EQ(bytes_text(0), "0 B");
  EXPECT_EQ(bytes_text(1023), "1023 B");
  EXPECT_EQ(bytes_text(1024), "1.0 KiB");
  EXPECT_EQ(bytes_text(1536), "1.5 KiB");
  EXPECT_EQ(bytes_text(48ull * 1024 * 1024), "48.0 MiB");
  EXPECT_EQ(bytes_text(3ull << 40), "3.0 TiB");
  EXPECT_EQ(bytes_text(2048ull << 40), "2048.0 TiB");  // TiB is the largest unit.
}

TEST(TextFormat, NumbersAndShapes) {
  EXPECT_EQ(fixed_text(0.04234, 4), "0.0423");
  EXPECT_EQ(fixed_text(2.0, 1), "2.0");
  EXPECT_EQ(ms_text(12345.0), "12.35");  // Microseconds in, milliseconds out.
  v1::Shape shape;
  shape.set_width(640);
  shape.set_height(480);
  shape.set_channels(3);
  EXPECT_EQ(shape_text(shape), "640x480x3");
}

}  // namespace
}  // namespace svdserve
