// How the loader routes JPEGs: size limits from the header before any decoding, and the JPEGs a
// backend decodes itself passed on undecoded.
#include "tests/test_paths.hpp"
#include "server/runtime/image_codec.hpp"

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

std::vector<uint8_t> encode_jpeg(const cv::Mat& image, const std::vector<int>& parameters = {}) {
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(cv::imencode(".jpg", image, bytes, parameters));
  return bytes;
}

cv::Mat noise(int rows, int cols, int type) {
  cv::Mat image(rows, cols, type);
  cv::randu(image, 0, 255);
  return image;
}

ImageSource source_of(const std::vector<uint8_t>& bytes) {
  return EncodedImage{std::as_bytes(std::span(bytes))};
}

// A filter that takes every JPEG and remembers the last header it saw.
struct TakeEveryJpeg {
  JpegHeader* seen;
  bool operator()(const JpegHeader& header) const {
    *seen = header;
    return true;
  }
};

TEST(ImageCodecJpeg, AJpegTheBackendDecodesIsPassedOnWithItsHeadersShape) {
  const std::vector<uint8_t> bytes = encode_jpeg(noise(30, 50, CV_8UC3));
  JpegHeader seen;
  const DecodedImage image = decode_image(source_of(bytes), ImageLimits{}, TakeEveryJpeg{&seen});
  ASSERT_TRUE(image.is_jpeg());
  EXPECT_TRUE(image.samples.empty());
  EXPECT_EQ(image.shape, (ImageShape{50, 30, 3}));
  EXPECT_EQ(image.type, SampleType::u8);
  EXPECT_EQ(image.jpeg.size(), bytes.size());
  EXPECT_EQ(seen.width, 50U);
}

TEST(ImageCodecJpeg, AJpegTheBackendRefusesIsDecodedHere) {
  const std::vector<uint8_t> bytes =
      encode_jpeg(noise(30, 50, CV_8UC1), {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  const DeviceJpegFilter only_baseline = [](const JpegHeader& header) {
    return header.coding == JpegCoding::baseline;
  };
  const DecodedImage image = decode_image(source_of(bytes), ImageLimits{}, only_baseline);
  EXPECT_FALSE(image.is_jpeg());
  EXPECT_EQ(image.shape, (ImageShape{50, 30, 1}));
  EXPECT_EQ(image.samples.size(), 50U * 30U);
}

TEST(ImageCodecJpeg, ADeclaredSizeOverTheLimitsIsRefusedAtTheHeader) {
  // 8x8 pixels of data, a frame header that declares 32768 x 32768: decoding would allocate
  // gigabytes before finding the data missing.
  std::vector<uint8_t> bytes = encode_jpeg(noise(8, 8, CV_8UC1));
  bool patched = false;
  for (std::size_t i = 2; i + 9 < bytes.size() && !patched; ++i) {
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xC0) {
      bytes[i + 5] = 0x80, bytes[i + 6] = 0x00, bytes[i + 7] = 0x80, bytes[i + 8] = 0x00;
      patched = true;
    }
  }
  ASSERT_TRUE(patched);
  for (const bool device : {false, true}) {
    JpegHeader seen;
    const DeviceJpegFilter filter = device ? DeviceJpegFilter(TakeEveryJpeg{&seen}) : nullptr;
    const auto start = std::chrono::steady_clock::now();
    try {
      (void)decode_image(source_of(bytes), ImageLimits{}, filter);
      ADD_FAILURE() << "expected InvalidArgument";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("32768x32768"), std::string::npos) << e.what();
    }
    EXPECT_EQ(seen.width, 0U) << "refused before the backend is asked";
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  }
}

TEST(ImageCodecJpeg, AJpegWithDamagedTablesGoesToOpenCvAndIsInvalidArgument) {
  std::vector<uint8_t> bytes = encode_jpeg(noise(32, 32, CV_8UC3));
  for (std::size_t i = 2; i + 21 < bytes.size(); ++i) {
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xC4) {  // the first Huffman table's code counts
      for (std::size_t j = i + 5; j < i + 21; ++j) bytes[j] = 0xFF;
      break;
    }
  }
  const DeviceJpegFilter only_well_formed = [](const JpegHeader& header) {
    return header.well_formed;
  };
  EXPECT_THROW((void)decode_image(source_of(bytes), ImageLimits{}, only_well_formed),
               InvalidArgument);
}

TEST(ImageCodecJpeg, BytesAfterTheEndMarkerDecodeAsTheImage) {
  const cv::Mat image = noise(48, 64, CV_8UC3);  // rows, columns
  std::vector<uint8_t> bytes = encode_jpeg(image);
  const DecodedImage plain = decode_image(source_of(bytes), ImageLimits{}, nullptr);
  bytes.insert(bytes.end(), 300, 0x5a);  // a trailer after the end marker
  const DecodedImage trailed = decode_image(source_of(bytes), ImageLimits{}, nullptr);
  EXPECT_EQ(trailed.shape.width, 64U);
  EXPECT_EQ(trailed.shape.height, 48U);
  EXPECT_EQ(trailed.samples, plain.samples);
}

TEST(ImageCodecJpeg, ATruncatedJpegIsRefusedWhoeverWouldDecodeIt) {
  std::vector<uint8_t> bytes = encode_jpeg(noise(64, 64, CV_8UC3));
  for (const std::size_t kept : {bytes.size() / 2, bytes.size() - 2}) {  // half; all but EOI
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(kept));
    for (const bool device : {false, true}) {
      JpegHeader seen;
      const DeviceJpegFilter filter = device ? DeviceJpegFilter(TakeEveryJpeg{&seen}) : nullptr;
      try {
        (void)decode_image(source_of(cut), ImageLimits{}, filter);
        ADD_FAILURE() << "a truncated JPEG was accepted, " << kept << " bytes";
      } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
      }
      EXPECT_EQ(seen.width, 0U) << "refused before the backend is asked";
    }
  }
}

}  // namespace
}  // namespace svdserve
