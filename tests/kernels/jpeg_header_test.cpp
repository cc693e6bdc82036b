#include "kernels/jpeg_header.hpp"

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include "test_images.hpp"

namespace svdserve {
namespace {

std::vector<uint8_t> encode(const cv::Mat& image, const std::vector<int>& parameters = {}) {
  return test::encode_jpeg(image, parameters);
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
  EXPECT_TRUE(header->well_formed);
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

// Cameras and editors append trailers after the end marker; libjpeg decodes such files, and so
// must the server. A cut-off file with bytes appended is still incomplete.
TEST(JpegHeader, BytesAfterTheEndMarkerAreAllowed) {
  const std::string trailer = "a maker's trailer \xff\x00 after the image";
  std::vector<uint8_t> trailed = encode(noise(64, 64, CV_8UC3));
  trailed.insert(trailed.end(), trailer.begin(), trailer.end());
  EXPECT_TRUE(header_of(trailed)->complete);

  std::vector<uint8_t> cut = encode(noise(64, 64, CV_8UC3));
  cut.resize(cut.size() / 2);
  cut.insert(cut.end(), trailer.begin(), trailer.end());
  EXPECT_FALSE(header_of(cut)->complete);
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

// Offset of the first (0xFF, marker) pair after SOI.
std::size_t find_marker(const std::vector<uint8_t>& bytes, uint8_t marker) {
  for (std::size_t i = 2; i + 1 < bytes.size(); ++i) {
    if (bytes[i] == 0xFF && bytes[i + 1] == marker) return i;
  }
  ADD_FAILURE() << "no marker " << int{marker};
  return bytes.size();
}

TEST(JpegHeader, DamagedTablesOrScanHeadersAreNotWellFormed) {
  const std::vector<uint8_t> good = encode(noise(32, 48, CV_8UC3));
  ASSERT_TRUE(header_of(good)->well_formed);
  for (const auto& header : {header_of(encode(noise(16, 8, CV_8UC1))),
                             header_of(encode(noise(64, 64, CV_8UC3),
                                              {cv::IMWRITE_JPEG_RST_INTERVAL, 2}))}) {
    ASSERT_TRUE(header);
    EXPECT_TRUE(header->well_formed);
  }

  std::vector<uint8_t> no_scan(good.begin(), good.begin() + find_marker(good, 0xDA));
  no_scan.insert(no_scan.end(), {0xFF, 0xD9});
  ASSERT_TRUE(header_of(no_scan));
  EXPECT_TRUE(header_of(no_scan)->complete);
  EXPECT_FALSE(header_of(no_scan)->well_formed);

  std::vector<uint8_t> bad_huffman = good;
  const std::size_t table = find_marker(bad_huffman, 0xC4);
  for (std::size_t i = table + 5; i < table + 21; ++i) bad_huffman[i] = 0xFF;  // code counts
  EXPECT_FALSE(header_of(bad_huffman)->well_formed);

  std::vector<uint8_t> bad_quantisation = good;
  bad_quantisation[find_marker(bad_quantisation, 0xDB) + 4] = 0x27;  // 16-bit table id 7
  EXPECT_FALSE(header_of(bad_quantisation)->well_formed);

  std::vector<uint8_t> undefined_table = good;
  const std::size_t scan = find_marker(undefined_table, 0xDA);
  undefined_table[scan + 6] = 0x33;  // the first scan component's DC/AC tables: 3, never defined
  EXPECT_FALSE(header_of(undefined_table)->well_formed);

  std::vector<uint8_t> unknown_component = good;
  unknown_component[scan + 5] = 0x7E;  // a component id the frame does not have
  EXPECT_FALSE(header_of(unknown_component)->well_formed);
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
