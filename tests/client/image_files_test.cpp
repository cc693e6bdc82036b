#include "client/image_files.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "temp_folder.hpp"

namespace svdserve {
namespace {

namespace fs = std::filesystem;

class ImageFiles : public ::testing::Test {
 protected:
  void touch(const fs::path& relative, std::string_view content = "x") const {
    fs::create_directories((root_ / relative).parent_path());
    write_file_bytes(root_ / relative, content);
  }
  [[nodiscard]] std::vector<std::string> relative(const std::vector<fs::path>& files) const {
    std::vector<std::string> names;
    for (const auto& file : files) names.push_back(file.lexically_relative(root_).generic_string());
    return names;
  }

  testing::TempFolder folder_{"svdserve_image_files_test"};
  const fs::path& root_ = folder_.path();
};

TEST(LowerCaseExtension, WithoutTheDot) {
  EXPECT_EQ(lower_case_extension("a.PNG"), "png");
  EXPECT_EQ(lower_case_extension("dir.D/x.JpEg"), "jpeg");
  EXPECT_EQ(lower_case_extension("a.tar.GZ"), "gz");
  for (const char* none : {"a", "a.", ".png", "dir.d/x"}) EXPECT_EQ(lower_case_extension(none), "") << none;
}

TEST(HasImageExtension, KnownExtensionsInAnyCase) {
  for (const char* name : {"a.png", "a.PNG", "b.jpg", "b.JpEg", "c.tif", "c.tiff", "d.bmp", "e.pgm", "f.ppm",
                           "g.pnm", "h.webp", "dir.d/x.Png"}) {
    EXPECT_TRUE(has_image_extension(name)) << name;
  }
  for (const char* name : {"a.txt", "png", "a.png.bak", "a.", "a", ".png", "a.gif", "a.jp"}) {
    EXPECT_FALSE(has_image_extension(name)) << name;
  }
}

TEST_F(ImageFiles, ListsImagesSortedAndSkipsOthers) {
  touch("b.png");
  touch("A.JPG");
  touch("c.txt");
  touch("a.tiff");
  touch("sub/d.png");
  fs::create_directories(root_ / "folder.png");  // A folder with an image name is not a file.
  EXPECT_EQ(relative(list_image_files(root_)), (std::vector<std::string>{"A.JPG", "a.tiff", "b.png"}));
}

TEST_F(ImageFiles, RecursiveListingIncludesSubFolders) {
  touch("b.png");
  touch("sub/d.png");
  touch("sub/deeper/e.webp");
  touch("sub/notes.md");
  touch("a/z.bmp");
  EXPECT_EQ(relative(list_image_files(root_, /*recursive=*/true)),
            (std::vector<std::string>{"a/z.bmp", "b.png", "sub/d.png", "sub/deeper/e.webp"}));
}

TEST_F(ImageFiles, EmptyFolderListsNothing) { EXPECT_TRUE(list_image_files(root_, true).empty()); }

TEST_F(ImageFiles, MissingFolderThrows) {
  EXPECT_THROW(static_cast<void>(list_image_files(root_ / "missing")), fs::filesystem_error);
}

TEST_F(ImageFiles, ReadAndWriteBytesRoundTrip) {
  std::string bytes(1000, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  write_file_bytes(root_ / "blob.bin", bytes);
  EXPECT_EQ(read_file_bytes(root_ / "blob.bin"), bytes);
  write_file_bytes(root_ / "blob.bin", "short");
  EXPECT_EQ(read_file_bytes(root_ / "blob.bin"), "short");
}

TEST_F(ImageFiles, ReadErrorsNameThePath) {
  try {
    static_cast<void>(read_file_bytes(root_ / "missing.png"));
    FAIL() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("missing.png"), std::string::npos);
  }
  EXPECT_THROW(static_cast<void>(read_file_bytes(root_)), std::runtime_error);
  EXPECT_THROW(write_file_bytes(root_ / "no/such/folder/x", "x"), std::runtime_error);
}

}  // namespace
}  // namespace svdserve
