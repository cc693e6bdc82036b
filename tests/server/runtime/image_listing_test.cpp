// LoadDirectory's walk on real folders below a root: image files are listed by their paths below
// the root; links (to files or folders, in or out of the root), FIFOs and devices are skipped
// with their own reason or not walked, and nothing is read through them.

#include "server/runtime/image_listing.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <fstream>

#include "server/runtime/image_file.hpp"
#include "tests/client/temp_folder.hpp"

namespace svdserve {
namespace {

namespace fs = std::filesystem;
using testing::TempFolder;

constexpr std::size_t kAnySize = 1 << 20;

class ImageListingTest : public ::testing::Test {
 protected:
  ImageListingTest()
      : scratch_path_(fs::canonical(scratch_.path())),
        root_path_(scratch_path_ / "root"),
        outside_(scratch_path_ / "outside") {
    fs::create_directories(root_path_ / "sub" / "deeper");
    fs::create_directories(outside_);
    write(outside_ / "secret.png", "secret");
    write(root_path_ / "top.png", "top");
    write(root_path_ / "notes.txt", "not an image");
    write(root_path_ / "sub" / "a.JPG", "a");
    write(root_path_ / "sub" / "deeper" / "b.webp", "b");
  }

  static void write(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  [[nodiscard]] ConfinedFolder root() const {
    return ConfinedFolder::open_absolute(root_path_.string());
  }

  TempFolder scratch_{"svdserve-listing"};
  fs::path scratch_path_;
  fs::path root_path_;
  fs::path outside_;
};

std::vector<std::string> paths_of(const std::vector<ListedImage>& images) {
  std::vector<std::string> paths;
  for (const auto& image : images) paths.push_back(image.path);
  return paths;
}

const ListedImage& entry(const std::vector<ListedImage>& images, const std::string& path) {
  const auto found = std::find_if(images.begin(), images.end(),
                                  [&](const ListedImage& image) { return image.path == path; });
  if (found == images.end()) throw std::runtime_error("no entry " + path);
  return *found;
}

TEST_F(ImageListingTest, ImagesAreListedByTheirPathsBelowTheRoot) {
  EXPECT_EQ(paths_of(list_images(root(), "", /*recursive=*/true)),
            (std::vector<std::string>{"sub/a.JPG", "sub/deeper/b.webp", "top.png"}));
  EXPECT_EQ(paths_of(list_images(root(), "", /*recursive=*/false)),
            (std::vector<std::string>{"top.png"}));
  EXPECT_EQ(paths_of(list_images(root(), "sub", /*recursive=*/true)),
            (std::vector<std::string>{"sub/a.JPG", "sub/deeper/b.webp"}));
  for (const auto& image : list_images(root(), "", true)) EXPECT_FALSE(image.skipped) << image.path;
  EXPECT_EQ(read_image_file(root(), "sub/deeper/b.webp", kAnySize), "b");
}

TEST_F(ImageListingTest, LinksAreSkippedOrNotWalkedAndNeverRead) {
  fs::create_symlink(outside_ / "secret.png", root_path_ / "link.png");
  fs::create_symlink(root_path_ / "top.png", root_path_ / "inside-link.png");
  fs::create_directory_symlink(outside_, root_path_ / "out");
  fs::create_directory_symlink("/proc", root_path_ / "proc");
  const auto images = list_images(root(), "", /*recursive=*/true);

  for (const char* link : {"link.png", "inside-link.png"}) {
    const ListedImage& skipped = entry(images, link);
    ASSERT_TRUE(skipped.skipped) << link;
    EXPECT_EQ(skipped.skipped->kind(), ErrorKind::invalid_argument);
    EXPECT_EQ(std::string(skipped.skipped->what()),
              "the image file is a symbolic link, not a regular file (links are not followed)");
    // Swapped in after the listing, a link is still not read.
    EXPECT_THROW((void)read_image_file(root(), link, kAnySize), InvalidArgument) << link;
  }
  for (const auto& image : images) {
    EXPECT_EQ(image.path.rfind("out/", 0), std::string::npos) << "a linked folder was walked";
    EXPECT_EQ(image.path.rfind("proc/", 0), std::string::npos) << "a linked folder was walked";
  }
  // A path through a linked folder is refused before the file is opened.
  try {
    (void)read_image_file(root(), "out/secret.png", kAnySize);
    ADD_FAILURE() << "read through a link";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::permission_denied);
    EXPECT_EQ(std::string(e.what()), "'out' is a symbolic link (links are not followed)");
  }
}

TEST_F(ImageListingTest, FifosAndDevicesAreSkipped) {
  ASSERT_EQ(mkfifo((root_path_ / "pipe.png").c_str(), 0600), 0);
  // Only a privileged test run can make a device node; the FIFO stands in for it elsewhere.
  const bool device = mknod((root_path_ / "null.png").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0;
  const auto images = list_images(root(), "", /*recursive=*/false);
  const ListedImage& pipe = entry(images, "pipe.png");
  ASSERT_TRUE(pipe.skipped);
  EXPECT_EQ(std::string(pipe.skipped->what()),
            "the image file is a FIFO, not a regular file (links are not followed)");
  EXPECT_THROW((void)read_image_file(root(), "pipe.png", kAnySize), InvalidArgument);
  if (device) {
    const ListedImage& null = entry(images, "null.png");
    ASSERT_TRUE(null.skipped);
    EXPECT_NE(std::string(null.skipped->what()).find("character device"), std::string::npos);
    EXPECT_THROW((void)read_image_file(root(), "null.png", kAnySize), InvalidArgument);
  }
}

// A folder that cannot be walked is an entry of its own, named below the root.
TEST_F(ImageListingTest, AFolderReplacedByALinkIsAnEntryOfItsOwn) {
  const ConfinedFolder opened = root();
  fs::rename(root_path_ / "sub", outside_ / "sub");
  fs::create_directory_symlink(outside_ / "sub", root_path_ / "sub");
  const auto images = list_images(opened, "sub", /*recursive=*/true);
  ASSERT_EQ(images.size(), 1u);
  EXPECT_EQ(images[0].path, "sub");
  ASSERT_TRUE(images[0].skipped);
  EXPECT_EQ(images[0].skipped->kind(), ErrorKind::permission_denied);
  EXPECT_THROW((void)read_image_file(opened, "sub/a.JPG", kAnySize), PermissionDenied);
}

TEST(ImageExtension, ImageNamesInAnyCase) {
  for (const char* name : {"a.png", "b.JPEG", "c.jpg", "d.tif", "e.TIFF", "f.bmp", "g.pgm",
                           "h.ppm", "i.pnm", "j.webp", "archive.tar.png"}) {
    EXPECT_TRUE(has_image_extension(name)) << name;
  }
  for (const char* name : {"notes.txt", "png", ".png", "a.png.txt", "a."}) {
    EXPECT_FALSE(has_image_extension(name)) << name;
  }
}

}  // namespace
}  // namespace svdserve
