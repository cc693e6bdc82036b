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
  EXPECT_EQ(choose_output_format(std::nullopt, "out"), v1::OUTPUT_FORMAT_RAW_U8);
  EXPECT_EQ(choose_output_format(std::nullopt, "out.u8"), v1::OUTPUT_FORMAT_RAW_U8);
  EXPECT_EQ(choose_output_format(std::nullopt, "out.ppm"), v1::OUTPUT_FORMAT_RAW_U8);
  // A name that says no format is a usage error, not a file of raw bytes under that name.
  EXPECT_THROW(static_cast<void>(choose_output_format(std::nullopt, "out.xyz")), UsageError);
  EXPECT_THROW(static_cast<void>(choose_output_format(std::nullopt, "out.txt")), UsageError);
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

// PGM holds grey and PPM colour only: a colour reconstruction written as .pgm is made grey, a
// grey one written as .ppm is made colour, instead of OpenCV refusing them.
TEST_F(ImageOutput, PnmNamesTakeEitherChannelCount) {
  v1::Shape colour;
  colour.set_width(5);
  colour.set_height(2);
  colour.set_channels(3);
  v1::Shape grey = colour;
  grey.set_channels(1);
  EXPECT_GT(write_output_image(root_ / "c.pgm", v1::OUTPUT_FORMAT_RAW_U8, colour,
                               std::string(5 * 2 * 3, '\x40')),
            0u);
  EXPECT_EQ(read_file_bytes(root_ / "c.pgm").substr(0, 2), "P5");
  EXPECT_GT(write_output_image(root_ / "g.ppm", v1::OUTPUT_FORMAT_RAW_U8, grey,
                               std::string(5 * 2, '\x40')),
            0u);
  EXPECT_EQ(read_file_bytes(root_ / "g.ppm").substr(0, 2), "P6");
  const std::string ppm = read_file_bytes(root_ / "g.ppm");
  EXPECT_EQ(ppm.substr(ppm.size() - 3), std::string(3, '\x40')) << "grey copied to each channel";
}

}  // namespace
}  // namespace svdserve::cli
