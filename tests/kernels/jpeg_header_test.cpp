#include "kernels/jpeg_header.hpp"

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace svdserve {
namespace {

std::vector<uint8_t> encode(const cv::Mat& image, const std::vector<int>& parameters = {}) {
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(cv::imencode(".jpg", image, bytes, parameters));
  return bytes;
}

std::optional<JpegHeader> header_of(const std::vector<uint8_t>& bytes) {
  return read_jpeg_header(std::as_bytes(std::span(bytes)));
}

cv::Mat noise(int rows, int cols, int type) {
  cv::Mat image(rows, cols, type);
  cv::randu(image, 0, 255);
  return image;
}

TEST(JpegHeader, ReadsSizeComponentsAndCodingOfABaselineColourJpeg) {
  const std::optional<JpegHeader> header = header_of(encode(noise(37, 91, CV_8UC3)));
  ASSERT_TRUE(header);
  EXPECT_EQ(header->width, 91U);
  EXPECT_EQ(header->height, 37U);
  EXPECT_EQ(header->components, 3U);
  EXPECT_EQ(header->precision, 8U);
  EXPECT_EQ(header->coding, JpegCoding::baseline);
  EXPECT_TRUE(header->complete);
}

TEST(JpegHeader, GreyIsOneComponent) {
  const std::optional<JpegHeader> header = header_of(encode(noise(16, 8, CV_8UC1)));
  ASSERT_TRUE(header);
  EXPECT_EQ(header->components, 1U);
  EXPECT_EQ(header->width, 8U);
}

TEST(JpegHeader, ProgressiveAndRestartMarkersAreRecognised) {
  const cv::Mat image = noise(64, 64, CV_8UC3);
  const std::optional<JpegHeader> progressive =
      header_of(encode(image, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}));
  ASSERT_TRUE(progressive);
  EXPECT_EQ(progressive->coding, JpegCoding::progressive);
  const std::optional<JpegHeader> restarts =
      header_of(encode(image, {cv::IMWRITE_JPEG_RST_INTERVAL, 2}));
  ASSERT_TRUE(restarts);
  EXPECT_EQ(restarts->coding, JpegCoding::baseline);
  EXPECT_TRUE(restarts->complete);
}

TEST(JpegHeader, ATruncatedJpegIsIncomplete) {
  std::vector<uint8_t> bytes = encode(noise(64, 64, CV_8UC3));
  bytes.resize(bytes.size() / 2);
  const std::optional<JpegHeader> header = header_of(bytes);
  ASSERT_TRUE(header);
  EXPECT_FALSE(header->complete);
  // Zero padding after the end marker is still complete.
  std::vector<uint8_t> padded = encode(noise(8, 8, CV_8UC1));
  padded.insert(padded.end(), 5, 0);
  EXPECT_TRUE(header_of(padded)->complete);
}

TEST(JpegHeader, ReadsTheDeclaredSizeOfAHugeImageWithoutDecodingIt) {
  std::vector<uint8_t> bytes = encode(noise(8, 8, CV_8UC1));
  // Rewrite the frame header's height and width to 32768 x 65535.
  for (std::size_t i = 2; i + 9 < bytes.size(); ++i) {
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xC0) {
      bytes[i + 5] = 0x80, bytes[i + 6] = 0x00;
      bytes[i + 7] = 0xFF, bytes[i + 8] = 0xFF;
      break;
    }
  }
  const std::optional<JpegHeader> header = header_of(bytes);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->height, 32768U);
  EXPECT_EQ(header->width, 65535U);
}

TEST(JpegHeader, OtherFormatsAndMalformedMarkersAreNotJpegs) {
  std::vector<uint8_t> png;
  ASSERT_TRUE(cv::imencode(".png", noise(4, 4, CV_8UC1), png));
  EXPECT_FALSE(header_of(png));
  EXPECT_FALSE(header_of({}));
  EXPECT_FALSE(header_of({0xFF, 0xD8}));
  EXPECT_FALSE(header_of({0xFF, 0xD8, 0xFF, 0xE0, 0xFF, 0xFF}));  // segment longer than the file
  EXPECT_FALSE(header_of({0xFF, 0xD8, 0x12, 0x34, 0x56, 0x78}));  // no marker after SOI
  EXPECT_FALSE(header_of({0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02}));  // a scan before any frame
}

TEST(JpegHeader, EveryPrefixOfAJpegIsReadSafely) {
  const std::vector<uint8_t> bytes = encode(noise(24, 40, CV_8UC3));
  std::size_t with_header = 0;
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    const std::optional<JpegHeader> header =
        read_jpeg_header(std::as_bytes(std::span(bytes.data(), length)));
    if (header) {
      ++with_header;
      EXPECT_FALSE(header->complete) << length;
      EXPECT_EQ(header->width, 40U);
    }
  }
  EXPECT_GT(with_header, 0U);  // prefixes past the frame header give its size
}

}  // namespace
}  // namespace svdserve
