#include "client/image_files.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "client/cli/image_output.hpp"

namespace svdserve {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the system temp folder, removed afterwards.
class TempFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device seed;
    root_ = fs::temp_directory_path() / ("svdserve_client_test_" + std::to_string(seed()));
    fs::create_directories(root_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  void touch(const fs::path& relative, std::string_view content = "x") const {
    fs::create_directories((root_ / relative).parent_path());
    write_file_bytes(root_ / relative, content);
  }
  [[nodiscard]] std::vector<std::string> relative(const std::vector<fs::path>& files) const {
    std::vector<std::string> names;
    for (const auto& file : files) names.push_back(file.lexically_relative(root_).generic_string());
    return names;
  }

  fs::path root_;
};

TEST(HasImageExtension, KnownExtensionsInAnyCase) {
  for (const char* name : {"a.png", "a.PNG", "b.jpg", "b.JpEg", "c.tif", "c.tiff", "d.bmp", "e.pgm", "f.ppm",
                           "g.pnm", "h.webp", "dir.d/x.Png"}) {
    EXPECT_TRUE(has_image_extension(name)) << name;
  }
  for (const char* name : {"a.txt", "png", "a.png.bak", "a.", "a", ".png", "a.gif", "a.jp"}) {
    EXPECT_FALSE(has_image_extension(name)) << name;
  }
}

TEST_F(TempFolder, ListsImagesSortedAndSkipsOthers) {
  touch("b.png");
  touch("A.JPG");
  touch("c.txt");
  touch("a.tiff");
  touch("sub/d.png");
  fs::create_directories(root_ / "folder.png");  // A folder with an image name is not a file.
  EXPECT_EQ(relative(list_image_files(root_)), (std::vector<std::string>{"A.JPG", "a.tiff", "b.png"}));
}

TEST_F(TempFolder, RecursiveListingIncludesSubFolders) {
  touch("b.png");
  touch("sub/d.png");
  touch("sub/deeper/e.webp");
  touch("sub/notes.md");
  touch("a/z.bmp");
  EXPECT_EQ(relative(list_image_files(root_, /*recursive=*/true)),
            (std::vector<std::string>{"a/z.bmp", "b.png", "sub/d.png", "sub/deeper/e.webp"}));
}

TEST_F(TempFolder, EmptyFolderListsNothing) { EXPECT_TRUE(list_image_files(root_, true).empty()); }

TEST_F(TempFolder, MissingFolderThrows) {
  EXPECT_THROW(static_cast<void>(list_image_files(root_ / "missing")), fs::filesystem_error);
}

TEST_F(TempFolder, ReadAndWriteBytesRoundTrip) {
  std::string bytes(1000, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  write_file_bytes(root_ / "blob.bin", bytes);
  EXPECT_EQ(read_file_bytes(root_ / "blob.bin"), bytes);
  write_file_bytes(root_ / "blob.bin", "short");
  EXPECT_EQ(read_file_bytes(root_ / "blob.bin"), "short");
}

TEST_F(TempFolder, ReadErrorsNameThePath) {
  try {
    static_cast<void>(read_file_bytes(root_ / "missing.png"));
    FAIL() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("missing.png"), std::string::npos);
  }
  EXPECT_THROW(static_cast<void>(read_file_bytes(root_)), std::runtime_error);
  EXPECT_THROW(write_file_bytes(root_ / "no/such/folder/x", "x"), std::runtime_error);
}

TEST(OutputFormat, ChosenFromFlagThenExtension) {
  using cli::choose_output_format;
  EXPECT_EQ(choose_output_format(std::nullopt, "out.png"), v1::OUTPUT_FORMAT_PNG);
  EXPECT_EQ(choose_output_format(std::nullopt, "out.PNG"), v1::OUTPUT_FORMAT_PNG);
  EXPECT_EQ(choose_output_format(std::nullopt, "out.jpg"), v1::OUTPUT_FORMAT_RAW_U8);
  EXPECT_EQ(choose_output_format(std::nullopt, "out.raw"), v1::OUTPUT_FORMAT_RAW_U8);
  EXPECT_EQ(choose_output_format(std::string("f32"), "out.png"), v1::OUTPUT_FORMAT_RAW_F32);
  EXPECT_EQ(choose_output_format(std::string("png"), "out.bin"), v1::OUTPUT_FORMAT_PNG);
  EXPECT_THROW(static_cast<void>(choose_output_format(std::string("jpeg"), "out.jpg")), cli::UsageError);

  EXPECT_TRUE(cli::encodes_locally(v1::OUTPUT_FORMAT_RAW_U8, "out.jpg"));
  EXPECT_TRUE(cli::encodes_locally(v1::OUTPUT_FORMAT_RAW_U8, "out.png"));
  EXPECT_FALSE(cli::encodes_locally(v1::OUTPUT_FORMAT_RAW_U8, "out.raw"));
  EXPECT_FALSE(cli::encodes_locally(v1::OUTPUT_FORMAT_PNG, "out.png"));
  EXPECT_FALSE(cli::encodes_locally(v1::OUTPUT_FORMAT_RAW_F32, "out.jpg"));
}

TEST_F(TempFolder, U8PixelsAreEncodedLocallyForImageNames) {
  v1::Shape shape;
  shape.set_width(4);
  shape.set_height(3);
  shape.set_channels(3);
  const std::string pixels(4 * 3 * 3, '\x80');

  const auto png_bytes = cli::write_output_image(root_ / "x.png", v1::OUTPUT_FORMAT_RAW_U8, shape, pixels);
  EXPECT_GT(png_bytes, 0u);
  EXPECT_EQ(read_file_bytes(root_ / "x.png").substr(0, 4), "\x89PNG");

  const auto raw_bytes = cli::write_output_image(root_ / "x.u8", v1::OUTPUT_FORMAT_RAW_U8, shape, pixels);
  EXPECT_EQ(raw_bytes, pixels.size());
  EXPECT_EQ(read_file_bytes(root_ / "x.u8"), pixels);

  EXPECT_THROW(static_cast<void>(cli::write_output_image(root_ / "bad.png", v1::OUTPUT_FORMAT_RAW_U8, shape,
                                                         pixels.substr(1))),
               std::runtime_error);
}

}  // namespace
}  // namespace svdserve
