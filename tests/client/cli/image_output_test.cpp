// Writing reconstructions to files: the format chosen from the flag or the file name, u8 pixels
// encoded here for image names, raw bytes otherwise.

#include "client/cli/image_output.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "client/image_files.hpp"
#include "temp_folder.hpp"

namespace svdserve::cli {
namespace {

class ImageOutput : public ::testing::Test {
 protected:
  testing::TempFolder folder_{"svdserve_image_output_test"};
  const std::filesystem::path& root_ = folder_.path();
};

TEST(OutputFormat, ChosenFromFlagThenExtension) {
  EXPECT_EQ(choose_output_format(std::nullopt, "out.png"), v1::OUTPUT_FORMAT_PNG);
  EXPECT_EQ(choose_output_format(std::nullopt, "out.PNG"), v1::OUTPUT_FORMAT_PNG);
  EXPECT_EQ(choose_output_format(std::nullopt, "out.jpg"), v1::OUTPUT_FORMAT_JPEG);
  EXPECT_EQ(choose_output_format(std::nullopt, "out.JPEG"), v1::OUTPUT_FORMAT_JPEG);
  EXPECT_EQ(choose_output_format(std::nullopt, "out.bmp"), v1::OUTPUT_FORMAT_RAW_U8);
  EXPECT_EQ(choose_output_format(std::nullopt, "out.raw"), v1::OUTPUT_FORMAT_RAW_U8);
  EXPECT_EQ(choose_output_format(std::string("f32"), "out.png"), v1::OUTPUT_FORMAT_RAW_F32);
  EXPECT_EQ(choose_output_format(std::string("png"), "out.bin"), v1::OUTPUT_FORMAT_PNG);
  EXPECT_EQ(choose_output_format(std::string("jpeg"), "out.bin"), v1::OUTPUT_FORMAT_JPEG);
  EXPECT_EQ(choose_output_format(std::string("jpg"), "out.bin"), v1::OUTPUT_FORMAT_JPEG);
  EXPECT_EQ(choose_output_format(std::string("u8"), "out.jpg"), v1::OUTPUT_FORMAT_RAW_U8);
  EXPECT_THROW(static_cast<void>(choose_output_format(std::string("gif"), "out.gif")), UsageError);
  EXPECT_EQ(output_format_name(v1::OUTPUT_FORMAT_JPEG), "jpeg");
  EXPECT_EQ(encoded_extension(v1::OUTPUT_FORMAT_JPEG), "jpg");
  EXPECT_EQ(encoded_extension(v1::OUTPUT_FORMAT_PNG), "png");

  EXPECT_TRUE(encodes_locally(v1::OUTPUT_FORMAT_RAW_U8, "out.jpg"));
  EXPECT_TRUE(encodes_locally(v1::OUTPUT_FORMAT_RAW_U8, "out.png"));
  EXPECT_FALSE(encodes_locally(v1::OUTPUT_FORMAT_RAW_U8, "out.raw"));
  EXPECT_FALSE(encodes_locally(v1::OUTPUT_FORMAT_PNG, "out.png"));
  EXPECT_FALSE(encodes_locally(v1::OUTPUT_FORMAT_RAW_F32, "out.jpg"));
}

TEST_F(ImageOutput, U8PixelsAreEncodedLocallyForImageNames) {
  v1::Shape shape;
  shape.set_width(4);
  shape.set_height(3);
  shape.set_channels(3);
  const std::string pixels(4 * 3 * 3, '\x80');

  const auto png_bytes = write_output_image(root_ / "x.png", v1::OUTPUT_FORMAT_RAW_U8, shape, pixels);
  EXPECT_GT(png_bytes, 0u);
  EXPECT_EQ(read_file_bytes(root_ / "x.png").substr(0, 4), "\x89PNG");

  const auto raw_bytes = write_output_image(root_ / "x.u8", v1::OUTPUT_FORMAT_RAW_U8, shape, pixels);
  EXPECT_EQ(raw_bytes, pixels.size());
  EXPECT_EQ(read_file_bytes(root_ / "x.u8"), pixels);

  EXPECT_THROW(
      static_cast<void>(write_output_image(root_ / "bad.png", v1::OUTPUT_FORMAT_RAW_U8, shape, pixels.substr(1))),
      std::runtime_error);
}

}  // namespace
}  // namespace svdserve::cli
