// The header reader the loader trusts before decoding: formats by magic bytes, and the sizes that
// OpenCV's own encoders and hand-made headers declare, in every accepted format.
#include "server/runtime/image_format.hpp"

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tests/support/hostile_images.hpp"

namespace svdserve {
namespace {

std::span<const std::byte> as_span(const std::string& bytes) {
  return std::as_bytes(std::span(bytes.data(), bytes.size()));
}

std::string encode(const cv::Mat& image, const std::string& extension,
                   const std::vector<int>& parameters = {}) {
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(cv::imencode(extension, image, bytes, parameters)) << extension;
  return {bytes.begin(), bytes.end()};
}

cv::Mat noise(int rows, int cols, int type) {
  cv::Mat image(rows, cols, type);
  cv::randu(image, 0, 255);
  return image;
}

struct Encoded {
  std::string name;
  ImageFormat format;
  std::string bytes;
};

// 300 x 200 (wide, so that a swapped width and height shows) in every way OpenCV writes them.
std::vector<Encoded> opencv_encodes() {
  const cv::Mat colour = noise(200, 300, CV_8UC3);
  const cv::Mat grey = noise(200, 300, CV_8UC1);
  const cv::Mat alpha = noise(200, 300, CV_8UC4);
  cv::Mat deep;
  colour.convertTo(deep, CV_16UC3, 257.0);
  return {
      {"png", ImageFormat::png, encode(colour, ".png")},
      {"png16", ImageFormat::png, encode(deep, ".png")},
      {"jpeg", ImageFormat::jpeg, encode(colour, ".jpg")},
      {"tiff", ImageFormat::tiff, encode(colour, ".tiff")},
      {"tiff16", ImageFormat::tiff, encode(deep, ".tiff")},
      {"bmp", ImageFormat::bmp, encode(colour, ".bmp")},
      {"bmp_grey", ImageFormat::bmp, encode(grey, ".bmp")},
      {"ppm", ImageFormat::pnm, encode(colour, ".ppm")},
      {"pgm", ImageFormat::pnm, encode(grey, ".pgm")},
      {"pbm", ImageFormat::pnm, encode(grey, ".pbm")},
      {"ppm_text", ImageFormat::pnm, encode(colour, ".ppm", {cv::IMWRITE_PXM_BINARY, 0})},
      {"pgm_text", ImageFormat::pnm, encode(grey, ".pgm", {cv::IMWRITE_PXM_BINARY, 0})},
      {"webp_lossy", ImageFormat::webp, encode(colour, ".webp", {cv::IMWRITE_WEBP_QUALITY, 80})},
      {"webp_lossless", ImageFormat::webp,
       encode(colour, ".webp", {cv::IMWRITE_WEBP_QUALITY, 101})},
      {"webp_alpha", ImageFormat::webp, encode(alpha, ".webp", {cv::IMWRITE_WEBP_QUALITY, 80})},
  };
}

TEST(ImageFormat, SniffsAndReadsTheSizeOfEveryAcceptedFormatAsOpenCvWritesIt) {
  for (const Encoded& encoded : opencv_encodes()) {
    SCOPED_TRACE(encoded.name);
    const std::optional<ImageFormat> format = sniff_image_format(as_span(encoded.bytes));
    ASSERT_EQ(format, encoded.format);
    if (encoded.format == ImageFormat::jpeg) continue;  // kernels/jpeg_header.hpp
    const std::optional<DeclaredImage> image = read_declared_image(*format, as_span(encoded.bytes));
    ASSERT_TRUE(image);
    EXPECT_EQ(image->width, 300U);
    EXPECT_EQ(image->height, 200U);
  }
}

// What admission counts on before decoding: never more channels than OpenCV decodes.
TEST(ImageFormat, APngsColourTypeBoundsTheChannelsDecoded) {
  cv::Mat rgba16;
  noise(20, 30, CV_8UC4).convertTo(rgba16, CV_16UC4, 257.0);
  for (const cv::Mat& image : {noise(20, 30, CV_8UC1), noise(20, 30, CV_8UC3),
                               noise(20, 30, CV_8UC4), rgba16}) {
    SCOPED_TRACE(image.channels());
    const std::string bytes = encode(image, ".png");
    const std::optional<DeclaredImage> declared =
        read_declared_image(ImageFormat::png, as_span(bytes));
    ASSERT_TRUE(declared);
    const cv::Mat decoded = cv::imdecode(
        cv::Mat(1, static_cast<int>(bytes.size()), CV_8U, const_cast<char*>(bytes.data())),
        cv::IMREAD_UNCHANGED);
    EXPECT_EQ(declared->min_channels, static_cast<uint32_t>(decoded.channels()));
  }
  const std::optional<DeclaredImage> bmp =
      read_declared_image(ImageFormat::bmp, as_span(test::bmp_declaring(30, 20)));
  ASSERT_TRUE(bmp);
  EXPECT_EQ(bmp->min_channels, 1U);  // other formats: the least any decodes to
}

TEST(ImageFormat, ReadsTheSizeOfHandMadeHeaders) {
  struct Case {
    std::string name;
    std::string bytes;
    uint32_t width, height;
  };
  std::string top_down = test::bmp_declaring(640, 480);
  top_down.replace(22, 4, std::string("\x20\xFE\xFF\xFF", 4));  // height -480: rows top-down
  std::string os2 = "BM" + std::string(12, '\0');
  test::append_le(os2, 12, 4);  // OS/2 1.x core header: 16-bit sizes
  test::append_le(os2, 640, 2);
  test::append_le(os2, 480, 2);
  test::append_le(os2, 1, 2);
  test::append_le(os2, 24, 2);
  const std::vector<Case> cases = {
      {"png", test::png_declaring(16000, 9000), 16000, 9000},
      {"tiff_intel", test::tiff_declaring(16000, 9000), 16000, 9000},
      {"tiff_motorola", test::tiff_declaring(16000, 9000, true), 16000, 9000},
      {"bigtiff", test::bigtiff_declaring(16000, 9000), 16000, 9000},
      {"bmp", test::bmp_declaring(16000, 9000), 16000, 9000},
      {"bmp_top_down", top_down, 640, 480},
      {"bmp_os2", os2, 640, 480},
      {"pgm_with_comment", test::pgm_declaring(16000, 9000), 16000, 9000},
      {"pgm_huge", "P5 99999999999999999999 3\n255\n", UINT32_MAX, 3},
      {"webp_lossless", test::webp_lossless_declaring(16000, 9000), 16000, 9000},
      {"webp_extended", test::webp_extended_declaring(100000, 9000), 100000, 9000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<ImageFormat> format = sniff_image_format(as_span(c.bytes));
    ASSERT_TRUE(format);
    const std::optional<DeclaredImage> image = read_declared_image(*format, as_span(c.bytes));
    ASSERT_TRUE(image);
    EXPECT_EQ(image->width, c.width);
    EXPECT_EQ(image->height, c.height);
  }
}

TEST(ImageFormat, OtherFormatsAreNotSniffed) {
  for (const std::string& bytes :
       {test::radiance_hdr_8x8(), test::pfm_8x8(), test::pam_8x8(), test::sun_raster_8x8(),
        std::string("BA") + std::string(40, '\0'), std::string("P7\n"), std::string("P5"),
        std::string("RIFF\0\0\0\0WAVEfmt ", 16), std::string("this is text"), std::string()}) {
    EXPECT_FALSE(sniff_image_format(as_span(bytes))) << bytes.substr(0, 12);
  }
}

TEST(ImageFormat, HeadersCutShortAreNotRead) {
  for (const Encoded& encoded : opencv_encodes()) {
    if (encoded.format == ImageFormat::jpeg) continue;
    SCOPED_TRACE(encoded.name);
    for (const std::size_t kept : {std::size_t{2}, std::size_t{5}}) {
      const std::string cut = encoded.bytes.substr(0, kept);
      EXPECT_FALSE(read_declared_image(encoded.format, as_span(cut))) << kept << " bytes";
    }
  }
  // A directory offset past the end, a chunk that is not VP8*.
  std::string tiff = test::tiff_declaring(8, 8);
  tiff[4] = '\xFF';
  EXPECT_FALSE(read_declared_image(ImageFormat::tiff, as_span(tiff)));
  std::string webp = test::webp_lossless_declaring(8, 8) + std::string(16, '\0');
  webp.replace(12, 4, "ALPH");
  EXPECT_FALSE(read_declared_image(ImageFormat::webp, as_span(webp)));
}

TEST(ImageFormat, SaysWhetherAPngOrWebPReachesItsEnd) {
  const cv::Mat colour = noise(200, 300, CV_8UC3);
  for (const auto& [format, bytes] :
       {std::pair{ImageFormat::png, encode(colour, ".png")},
        std::pair{ImageFormat::webp, encode(colour, ".webp", {cv::IMWRITE_WEBP_QUALITY, 80})}}) {
    SCOPED_TRACE(format_name(format));
    const std::optional<DeclaredImage> whole = read_declared_image(format, as_span(bytes));
    ASSERT_TRUE(whole);
    EXPECT_TRUE(whole->complete);
    for (const std::size_t kept : {bytes.size() / 2, bytes.size() - 1}) {
      const std::string cut = bytes.substr(0, kept);
      const std::optional<DeclaredImage> image = read_declared_image(format, as_span(cut));
      ASSERT_TRUE(image) << kept << " bytes";
      EXPECT_FALSE(image->complete) << kept << " bytes";
      EXPECT_EQ(image->width, 300U);
    }
  }
  // Trailing bytes after IEND are allowed; a chunk longer than PNG allows is malformed.
  const std::string png = encode(colour, ".png");
  EXPECT_TRUE(read_declared_image(ImageFormat::png, as_span(png + "trailer"))->complete);
  std::string huge_chunk = png;
  huge_chunk.replace(33, 4, "\xFF\xFF\xFF\xFF");  // the chunk after IHDR
  EXPECT_FALSE(read_declared_image(ImageFormat::png, as_span(huge_chunk)));
}

}  // namespace
}  // namespace svdserve
