#include "tests/test_paths.hpp"
#include "server/runtime/image_codec.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/errors.hpp"
#include "server/runtime/confined_folder.hpp"
#include "tests/support/hostile_images.hpp"

namespace svdserve {
namespace {

const std::filesystem::path kImages = svdserve::test::test_images_dir();

// A file of `folder` as LoadDirectory hands it to a loader: below an opened root.
ImageFile file_in(const std::filesystem::path& folder, const std::string& name) {
  const std::string root = std::filesystem::canonical(folder).string();
  return {std::make_shared<const ConfinedFolder>(ConfinedFolder::open_absolute(root)), name};
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file) << "cannot read " << path;
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

std::span<const std::byte> as_span(const std::string& bytes) {
  return std::as_bytes(std::span(bytes.data(), bytes.size()));
}

std::string encode(const cv::Mat& mat, const std::string& extension) {
  std::vector<uint8_t> buffer;
  EXPECT_TRUE(cv::imencode(extension, mat, buffer));
  return {buffer.begin(), buffer.end()};
}

template <typename F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected InvalidArgument";
  return {};
}

// Every value of the planar image equals the interleaved matrix's value times scale.
void expect_planes_match(const ImageF32& image, const cv::Mat& interleaved, double scale,
                         double tolerance = 0.0) {
  ASSERT_EQ(image.shape.width, static_cast<uint32_t>(interleaved.cols));
  ASSERT_EQ(image.shape.height, static_cast<uint32_t>(interleaved.rows));
  ASSERT_EQ(image.shape.channels, static_cast<uint32_t>(interleaved.channels()));
  ASSERT_EQ(image.planes.size(), image.shape.values());
  cv::Mat as_double;
  interleaved.convertTo(as_double, CV_MAKETYPE(CV_64F, interleaved.channels()), scale);
  std::size_t mismatches = 0;
  for (uint32_t c = 0; c < image.shape.channels; ++c) {
    const std::span<const float> plane = image.plane(c);
    for (int y = 0; y < interleaved.rows; ++y) {
      const double* row = as_double.ptr<double>(y);
      for (int x = 0; x < interleaved.cols; ++x) {
        const double expected = row[x * interleaved.channels() + static_cast<int>(c)];
        const double got = plane[static_cast<std::size_t>(y) * image.shape.width + x];
        if (std::abs(expected - got) > tolerance && mismatches++ < 5) {
          ADD_FAILURE() << "channel " << c << " y " << y << " x " << x << ": expected "
                        << expected << ", got " << got;
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

// Raw samples and their description, as a request carries them; source() views `data`.
struct RawInput {
  uint32_t width;
  uint32_t height;
  uint32_t channels;
  std::optional<SampleType> type;
  std::string data;

  [[nodiscard]] ImageSource source() const {
    return RawPixels{width, height, channels, type, as_span(data)};
  }
};

RawInput raw_input(uint32_t width, uint32_t height, uint32_t channels,
                   std::optional<SampleType> type, std::string data) {
  return {width, height, channels, type, std::move(data)};
}

template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// --- Real files --------------------------------------------------------------------------------

class DecodeRealImage : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodeRealImage, MatchesOpenCvsOwnDecode) {
  const std::filesystem::path path = kImages / GetParam();
  const cv::Mat reference = cv::imread(path.string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(reference.empty()) << path;
  const std::string bytes = read_bytes(path);

  const ImageF32 image = to_planes(decode_encoded(as_span(bytes), ImageLimits{}));
  expect_planes_match(image, reference, 1.0);
  // A real photo: on the 0..255 scale and not flat.
  const auto [low, high] = std::minmax_element(image.planes.begin(), image.planes.end());
  EXPECT_GE(*low, 0.0f);
  EXPECT_LE(*high, 255.0f);
  EXPECT_GT(*high - *low, 50.0f);

  // The request and file paths give the same planes.
  EXPECT_EQ(to_planes(decode_image(EncodedImage{as_span(bytes)}, ImageLimits{})).planes,
            image.planes);
  EXPECT_EQ(to_planes(decode_image(file_in(kImages, GetParam()), ImageLimits{})).planes,
            image.planes);
}

INSTANTIATE_TEST_SUITE_P(Images, DecodeRealImage,
                         ::testing::Values("baboon.jpg", "fruits.jpg", "messi5.jpg", "pic1.png",
                                           "building.jpg", "gradient.png"),
                         [](const auto& test_info) {
                           std::string name = test_info.param;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(ImageCodec, ColourJpegIsThreeChannelsAndRgbaPngIsFour) {
  const std::string jpeg = read_bytes(kImages / "baboon.jpg");
  const ImageF32 colour = to_planes(decode_encoded(as_span(jpeg), ImageLimits{}));
  EXPECT_EQ(colour.shape, (ImageShape{512, 512, 3}));

  const std::string png = read_bytes(kImages / "gradient.png");
  const ImageF32 bgra = to_planes(decode_encoded(as_span(png), ImageLimits{}));
  EXPECT_EQ(bgra.shape, (ImageShape{300, 300, 4}));
}

TEST(ImageCodec, GreyPngIsOneChannel) {
  const cv::Mat colour = cv::imread((kImages / "home.jpg").string(), cv::IMREAD_COLOR);
  ASSERT_FALSE(colour.empty());
  cv::Mat grey;
  cv::cvtColor(colour, grey, cv::COLOR_BGR2GRAY);
  const ImageF32 image = to_planes(decode_encoded(as_span(encode(grey, ".png")), ImageLimits{}));
  EXPECT_EQ(image.shape.channels, 1u);
  expect_planes_match(image, grey, 1.0);
}

TEST(ImageCodec, SixteenBitPngIsScaledTo255) {
  const cv::Mat photo = cv::imread((kImages / "fruits.jpg").string(), cv::IMREAD_COLOR);
  ASSERT_FALSE(photo.empty());
  cv::Mat deep;
  photo.convertTo(deep, CV_16UC3, 257.0);  // 255 -> 65535
  const ImageF32 image = to_planes(decode_encoded(as_span(encode(deep, ".png")), ImageLimits{}));
  expect_planes_match(image, deep, 255.0 / 65535.0, 1e-3);
  // Back on the 8-bit scale, the photo's own values come out again.
  expect_planes_match(image, photo, 1.0, 1e-3);

  cv::Mat deep_grey;
  cv::cvtColor(deep, deep_grey, cv::COLOR_BGR2GRAY);
  const ImageF32 grey = to_planes(decode_encoded(as_span(encode(deep_grey, ".png")), ImageLimits{}));
  EXPECT_EQ(grey.shape.channels, 1u);
  expect_planes_match(grey, deep_grey, 255.0 / 65535.0, 1e-3);

  // The ends of the range and a value between two 8-bit levels.
  const cv::Mat extremes = (cv::Mat_<uint16_t>(1, 3) << 0, 65535, 1000);
  const ImageF32 ends = to_planes(decode_encoded(as_span(encode(extremes, ".png")), ImageLimits{}));
  ASSERT_EQ(ends.planes.size(), 3u);
  EXPECT_FLOAT_EQ(ends.planes[0], 0.0f);
  EXPECT_FLOAT_EQ(ends.planes[1], 255.0f);
  EXPECT_NEAR(ends.planes[2], 1000 * 255.0 / 65535.0, 1e-4);
}

TEST(ImageCodec, TruncatedOrGarbageBytesAreInvalidArgument) {
  const std::string garbage = "this is not an image, just some bytes";
  const std::string message =
      invalid_argument_message([&] { (void)decode_encoded(as_span(garbage), ImageLimits{}); });
  EXPECT_NE(message.find("not a PNG, JPEG, TIFF, BMP, PNM (P1-P6) or WebP file"),
            std::string::npos)
      << message;

  const std::string png = read_bytes(kImages / "pic1.png");
  const std::string header_only = png.substr(0, 64);
  EXPECT_THROW((void)decode_encoded(as_span(header_only), ImageLimits{}), InvalidArgument);

  // Cut short: JPEG before its end-of-image marker (which libjpeg would fill in grey), PNG before
  // IEND, WebP before the end its RIFF header gives.
  const std::string jpeg = read_bytes(kImages / "baboon.jpg");
  const std::string webp = encode(cv::imread((kImages / "fruits.jpg").string()), ".webp");
  for (const std::string& cut : {jpeg.substr(0, jpeg.size() / 2), jpeg.substr(0, jpeg.size() - 2),
                                 png.substr(0, png.size() / 2), png.substr(0, png.size() - 12),
                                 webp.substr(0, webp.size() - 100)}) {
    const std::string truncated =
        invalid_argument_message([&] { (void)decode_encoded(as_span(cut), ImageLimits{}); });
    EXPECT_NE(truncated.find("truncated"), std::string::npos) << truncated;
  }
}

TEST(ImageCodec, EmptyBytesNoImageAndMissingFilesAreInvalidArgument) {
  EXPECT_NE(invalid_argument_message([&] { (void)decode_image(EncodedImage{}, ImageLimits{}); })
                .find("empty"),
            std::string::npos);
  EXPECT_NE(invalid_argument_message([&] { (void)decode_image(ImageSource{}, ImageLimits{}); })
                .find("no image"),
            std::string::npos);
  const std::string message = invalid_argument_message(
      [&] { (void)decode_image(file_in(kImages, "no-such-file.png"), ImageLimits{}); });
  EXPECT_NE(message.find("cannot read the image file"), std::string::npos) << message;
  EXPECT_EQ(message.find("no-such-file"), std::string::npos) << "the result names the file";

  // A file over max_image_bytes is refused by its size, before it is read.
  const std::size_t png_bytes = std::filesystem::file_size(kImages / "pic1.png");
  const std::string too_big = invalid_argument_message([&] {
    (void)decode_image(file_in(kImages, "pic1.png"), ImageLimits{.max_bytes = png_bytes - 1});
  });
  EXPECT_NE(too_big.find("max_image_bytes"), std::string::npos) << too_big;
  EXPECT_NO_THROW(
      (void)decode_image(file_in(kImages, "pic1.png"), ImageLimits{.max_bytes = png_bytes}));
}

// A path in the temp folder for one test, removed when the test ends.
class ScratchPath {
 public:
  explicit ScratchPath(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("svdserve-codec-" + std::to_string(getpid()) + "-" + name)) {
    std::filesystem::remove(path_);
  }
  ~ScratchPath() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  ScratchPath(const ScratchPath&) = delete;
  ScratchPath& operator=(const ScratchPath&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  [[nodiscard]] std::filesystem::path folder() const { return path_.parent_path(); }
  [[nodiscard]] std::string name() const { return path_.filename().string(); }

 private:
  std::filesystem::path path_;
};

// A FIFO (swapped in where an image was) must not block a loader thread: opening one for reading
// waits for a writer.
TEST(ImageCodec, FifoIsRefusedWithoutWaitingForAWriter) {
  const ScratchPath fifo("pipe.png");
  ASSERT_EQ(mkfifo(fifo.path().c_str(), 0600), 0);
  auto decoding = std::async(std::launch::async, [&] {
    return invalid_argument_message(
        [&] { (void)decode_image(file_in(fifo.folder(), fifo.name()), ImageLimits{}); });
  });
  if (decoding.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Release the reader waiting in open() so that the test can end.
    close(open(fifo.path().c_str(), O_WRONLY | O_NONBLOCK));
    ADD_FAILURE() << "reading a FIFO waited for a writer";
  }
  const std::string message = decoding.get();
  EXPECT_NE(message.find("not a regular file"), std::string::npos) << message;
}

TEST(ImageCodec, SymbolicLinkIsNotFollowed) {
  const ScratchPath link("link.png");
  std::filesystem::create_symlink(kImages / "pic1.png", link.path());
  const std::string message = invalid_argument_message(
      [&] { (void)decode_image(file_in(link.folder(), link.name()), ImageLimits{}); });
  EXPECT_NE(message.find("symbolic link"), std::string::npos) << message;
}

TEST(ImageCodec, FileOverTheSizeLimitIsRefused) {
  const std::size_t size = std::filesystem::file_size(kImages / "pic1.png");
  const std::string message = invalid_argument_message([&] {
    (void)decode_image(file_in(kImages, "pic1.png"), ImageLimits{.max_bytes = size - 1});
  });
  EXPECT_NE(message.find("max_image_bytes"), std::string::npos) << message;
  EXPECT_NO_THROW(
      (void)decode_image(file_in(kImages, "pic1.png"), ImageLimits{.max_bytes = size}));
}

TEST(ImageCodec, EncodedImageOverTheLimitsIsRefused) {
  const std::string jpeg = read_bytes(kImages / "aero1.jpg");  // 640x480
  const std::string too_wide = invalid_argument_message([&] {
    (void)decode_encoded(as_span(jpeg), ImageLimits{.max_width = 320, .max_height = 8192});
  });
  EXPECT_NE(too_wide.find("640x480"), std::string::npos) << too_wide;
  EXPECT_NE(too_wide.find("320x8192"), std::string::npos) << too_wide;
  EXPECT_THROW(
      (void)decode_encoded(as_span(jpeg), ImageLimits{.max_width = 8192, .max_height = 479}),
      InvalidArgument);

  const std::string too_big = invalid_argument_message([&] {
    (void)decode_encoded(as_span(jpeg), ImageLimits{.max_bytes = jpeg.size() - 1});
  });
  EXPECT_NE(too_big.find("max_image_bytes"), std::string::npos) << too_big;
  EXPECT_NO_THROW(
      (void)decode_encoded(as_span(jpeg), ImageLimits{.max_width = 640, .max_height = 480,
                                                      .max_bytes = jpeg.size()}));
}

TEST(ImageCodec, EveryFormatIsCheckedAgainstTheLimitsAtItsHeader) {
  // Headers declaring 16000 x 9000 in front of a few bytes: decoding would allocate the declared
  // size before finding the data missing.
  for (const std::string& bytes :
       {test::png_declaring(16000, 9000), test::tiff_declaring(16000, 9000),
        test::bigtiff_declaring(16000, 9000), test::bmp_declaring(16000, 9000),
        test::pgm_declaring(16000, 9000), test::webp_lossless_declaring(16000, 9000),
        test::webp_extended_declaring(16000, 9000)}) {
    const std::string message =
        invalid_argument_message([&] { (void)decode_encoded(as_span(bytes), ImageLimits{}); });
    EXPECT_NE(message.find("16000x9000"), std::string::npos) << message;
  }
}

// Admission by compute cost sees the shape from the header: whatever the check throws refuses
// the image before a decoder touches its data (here, data that would not decode).
TEST(ImageCodec, TheShapeCheckSeesEveryFormatsHeaderBeforeDecoding) {
  cv::Mat colour(48, 64, CV_8UC3, cv::Scalar(10, 20, 30));
  std::vector<uint8_t> jpeg;
  ASSERT_TRUE(cv::imencode(".jpg", colour, jpeg));
  struct Case {
    std::string name;
    std::string bytes;
    ImageShape shape;
  };
  const std::vector<Case> cases = {
      {"png", test::png_declaring(640, 480), {640, 480, 1}},
      {"png_rgba", test::png_header(640, 480, 6) + test::png_chunk("IEND", ""), {640, 480, 4}},
      {"tiff", test::tiff_declaring(640, 480), {640, 480, 1}},
      {"bmp", test::bmp_declaring(640, 480), {640, 480, 1}},
      {"pgm", test::pgm_declaring(640, 480), {640, 480, 1}},
      {"webp", test::webp_lossless_declaring(640, 480), {640, 480, 1}},
      {"jpeg", std::string(jpeg.begin(), jpeg.end()), {64, 48, 3}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::optional<ImageShape> seen;
    const ShapeCheck refuse = [&](const ImageShape& shape) {
      seen = shape;
      throw ResourceExhausted("too costly");
    };
    EXPECT_THROW((void)decode_encoded(as_span(c.bytes), ImageLimits{}, {}, refuse),
                 ResourceExhausted);
    EXPECT_EQ(seen, c.shape);
  }
  const std::string samples(std::size_t{8} * 6 * 3, '\x40');
  std::optional<ImageShape> seen;
  const ShapeCheck admit = [&](const ImageShape& shape) { seen = shape; };
  const DecodedImage raw = decode_image(
      RawPixels{8, 6, 3, SampleType::u8, as_span(samples)}, ImageLimits{}, {}, admit);
  EXPECT_EQ(seen, (ImageShape{8, 6, 3}));
  EXPECT_EQ(raw.shape, (ImageShape{8, 6, 3}));
}

TEST(ImageCodec, OnlyTheAcceptedFormatsAreDecoded) {
  for (const std::string& bytes : {test::radiance_hdr_8x8(), test::pfm_8x8(), test::pam_8x8(),
                                   test::sun_raster_8x8()}) {
    const std::string message =
        invalid_argument_message([&] { (void)decode_encoded(as_span(bytes), ImageLimits{}); });
    EXPECT_NE(message.find("not a PNG, JPEG, TIFF, BMP, PNM (P1-P6) or WebP file"),
              std::string::npos)
        << message;
  }
}

TEST(ImageCodec, DecoderFailuresAreReportedWithoutTheDecodersWords) {
  // Within limits this wide, but over OpenCV's own pixel limit: OpenCV throws, naming its source.
  const ImageLimits wide{.max_width = 65536, .max_height = 65536};
  std::string corrupt = read_bytes(kImages / "pic1.png");
  corrupt.replace(corrupt.size() / 2, 64, std::string(64, '\x55'));
  for (const std::string& bytes : {test::png_declaring(40000, 40000), corrupt}) {
    const std::string message =
        invalid_argument_message([&] { (void)decode_encoded(as_span(bytes), wide); });
    EXPECT_TRUE(message.starts_with("not a decodable PNG: ")) << message;
    for (const char* internal : {".cpp", "OpenCV", "error:", "modules/", "libpng"}) {
      EXPECT_EQ(message.find(internal), std::string::npos) << message;
    }
  }
}

// --- Raw pixels ---------------------------------------------------------------------------------

TEST(ImageCodec, KeepsTheDecodersSampleType) {
  // The backend converts samples to floats (on the GPU when there is one), so the codec must hand
  // them over as decoded: 8-bit stays 1 byte per sample, 16-bit 2, float 4.
  cv::Mat deep(4, 6, CV_16UC3, cv::Scalar(1000, 2000, 65535));
  const DecodedImage u16 = decode_encoded(as_span(encode(deep, ".png")), ImageLimits{});
  EXPECT_EQ(u16.type, SampleType::u16);
  EXPECT_EQ(u16.samples.size(), 4u * 6 * 3 * 2);
  cv::Mat grey(4, 6, CV_8UC1, cv::Scalar(7));
  const DecodedImage u8 = decode_encoded(as_span(encode(grey, ".png")), ImageLimits{});
  EXPECT_EQ(u8.type, SampleType::u8);
  EXPECT_EQ(u8.samples, std::vector<std::byte>(24, std::byte{7}));
  const std::vector<float> values{0.5f, 1.5f, 254.5f, 3.0f};
  const DecodedImage f32 =
      decode_image(raw_input(2, 2, 1, SampleType::f32, bytes_of(values)).source(), ImageLimits{});
  EXPECT_EQ(f32.type, SampleType::f32);
  EXPECT_EQ(to_planes(f32).planes, values);
}

TEST(ImageCodec, RawU8IsDeinterleavedIntoPlanes) {
  // 3 wide, 2 high, BGR: value = 100*channel + 10*y + x.
  std::vector<uint8_t> pixels;
  for (int y = 0; y < 2; ++y) {
    for (int x = 0; x < 3; ++x) {
      for (int c = 0; c < 3; ++c) pixels.push_back(static_cast<uint8_t>(100 * c + 10 * y + x));
    }
  }
  const ImageF32 image =
      to_planes(decode_image(raw_input(3, 2, 3, SampleType::u8, bytes_of(pixels)).source(), ImageLimits{}));
  EXPECT_EQ(image.shape, (ImageShape{3, 2, 3}));
  EXPECT_EQ(image.planes, (std::vector<float>{0, 1, 2, 10, 11, 12,          //
                                              100, 101, 102, 110, 111, 112,  //
                                              200, 201, 202, 210, 211, 212}));
}

TEST(ImageCodec, RawBgraKeepsFourChannels) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> value(0, 255);
  cv::Mat bgra(5, 7, CV_8UC4);
  for (auto it = bgra.begin<cv::Vec4b>(); it != bgra.end<cv::Vec4b>(); ++it) {
    for (int c = 0; c < 4; ++c) (*it)[c] = static_cast<uint8_t>(value(random));
  }
  const std::string data(reinterpret_cast<const char*>(bgra.data), bgra.total() * 4);
  const ImageF32 image = to_planes(decode_image(raw_input(7, 5, 4, SampleType::u8, data).source(), ImageLimits{}));
  expect_planes_match(image, bgra, 1.0);
}

TEST(ImageCodec, RawU16IsScaledTo255) {
  const std::vector<uint16_t> values{0, 257, 65535, 32768, 1, 12345};
  const ImageF32 image =
      to_planes(decode_image(raw_input(3, 2, 1, SampleType::u16, bytes_of(values)).source(), ImageLimits{}));
  ASSERT_EQ(image.planes.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_NEAR(image.planes[i], values[i] * 255.0 / 65535.0, 1e-3) << i;
  }
}

TEST(ImageCodec, RawF32KeepsValuesUnclamped) {
  // Two BGR pixels; values outside 0..255 pass through as they are.
  const std::vector<float> values{-1.5f, 0.25f, 300.0f, 17.0f, 254.75f, 1e-3f};
  const ImageF32 image =
      to_planes(decode_image(raw_input(2, 1, 3, SampleType::f32, bytes_of(values)).source(), ImageLimits{}));
  EXPECT_EQ(image.planes, (std::vector<float>{-1.5f, 17.0f, 0.25f, 254.75f, 300.0f, 1e-3f}));
}

TEST(ImageCodec, RawF32WithNanOrInfinityIsRefused) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    const std::vector<float> values{1.0f, 2.0f, bad, 4.0f};
    const std::string message = invalid_argument_message([&] {
      (void)decode_image(raw_input(2, 2, 1, SampleType::f32, bytes_of(values)).source(), ImageLimits{});
    });
    EXPECT_NE(message.find("NaN or infinite"), std::string::npos) << message;
  }
}

TEST(ImageCodec, RawSizeMismatchSaysWhatWasExpected) {
  const std::string message = invalid_argument_message([] {
    (void)decode_image(raw_input(4, 4, 1, SampleType::u16, std::string(31, '\1')).source(),
                       ImageLimits{});
  });
  EXPECT_NE(message.find("31 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("4*4*1*2 = 32"), std::string::npos) << message;
}

TEST(ImageCodec, RawShapeAndTypeProblemsAreRefused) {
  auto message_for = [](uint32_t w, uint32_t h, uint32_t c, std::optional<SampleType> type) {
    return invalid_argument_message([&] {
      (void)decode_image(raw_input(w, h, c, type, std::string(std::size_t{w} * h * c, '\1')).source(),
                         ImageLimits{});
    });
  };
  EXPECT_NE(message_for(0, 4, 1, SampleType::u8).find("zero width"), std::string::npos);
  EXPECT_NE(message_for(4, 0, 1, SampleType::u8).find("zero width or height"),
            std::string::npos);
  EXPECT_NE(message_for(4, 4, 2, SampleType::u8).find("2 channels"), std::string::npos);
  EXPECT_NE(message_for(4, 4, 5, SampleType::u8).find("5 channels"), std::string::npos);
  EXPECT_NE(message_for(4, 4, 0, SampleType::u8).find("0 channels"), std::string::npos);
  EXPECT_NE(message_for(4, 4, 1, std::nullopt).find("type is not set"),
            std::string::npos);
}

TEST(ImageCodec, RawOverTheLimitsIsRefused) {
  const ImageLimits small{.max_width = 16, .max_height = 8, .max_bytes = 100};
  auto decode_raw = [&](uint32_t w, uint32_t h) {
    return invalid_argument_message([&] {
      (void)decode_image(raw_input(w, h, 1, SampleType::u8, std::string(std::size_t{w} * h, '\1')).source(),
                         small);
    });
  };
  EXPECT_NE(decode_raw(17, 4).find("17x4, larger than the server's limit of 16x8"),
            std::string::npos);
  EXPECT_NE(decode_raw(4, 9).find("limit of 16x8"), std::string::npos);
  EXPECT_NE(decode_raw(16, 7).find("max_image_bytes"), std::string::npos);  // 112 > 100 bytes
  // Huge dimensions are refused before anything is allocated or multiplied out.
  const std::string huge = invalid_argument_message([&] {
    (void)decode_image(raw_input(4'000'000'000u, 4'000'000'000u, 4, SampleType::f32, "x").source(),
                       ImageLimits{});
  });
  EXPECT_NE(huge.find("larger than the server's limit"), std::string::npos) << huge;
}

// --- PNG output ---------------------------------------------------------------------------------

class EncodePng : public ::testing::TestWithParam<uint32_t> {};

TEST_P(EncodePng, RoundTripsRandomPixels) {
  const uint32_t channels = GetParam();
  const ImageShape shape{37, 23, channels};
  std::mt19937 random(channels);
  std::uniform_int_distribution<int> value(0, 255);
  std::string pixels(shape.values(), '\0');
  for (char& p : pixels) p = static_cast<char>(value(random));

  const std::string png = encode_png(as_span(pixels), shape);
  ASSERT_EQ(png.substr(1, 3), "PNG");
  const std::vector<uint8_t> png_bytes(png.begin(), png.end());
  const cv::Mat decoded = cv::imdecode(png_bytes, cv::IMREAD_UNCHANGED);
  ASSERT_EQ(decoded.channels(), static_cast<int>(channels));
  ASSERT_EQ(decoded.cols, 37);
  ASSERT_EQ(decoded.rows, 23);
  ASSERT_TRUE(decoded.isContinuous());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(decoded.data), pixels.size()), pixels);

  // And through the server's own decoder.
  const ImageF32 planes = to_planes(decode_encoded(as_span(png), ImageLimits{}));
  expect_planes_match(planes, decoded, 1.0);
}

INSTANTIATE_TEST_SUITE_P(Channels, EncodePng, ::testing::Values(1u, 3u, 4u));

// --- JPEG output --------------------------------------------------------------------------------

// A smooth image with some brightness noise, like a reconstruction: what JPEG is for (it keeps
// colour at half resolution, so the noise is the same in every channel).
std::string smooth_pixels(const ImageShape& shape, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> noise(-8, 8);
  std::string pixels(shape.values(), '\0');
  for (uint32_t y = 0; y < shape.height; ++y) {
    for (uint32_t x = 0; x < shape.width; ++x) {
      const int grain = noise(random);
      for (uint32_t c = 0; c < shape.channels; ++c) {
        const int value = static_cast<int>(20 + (3 * x) / 2 + y + 30 * c) + grain;  // <= 240
        pixels[(std::size_t{y} * shape.width + x) * shape.channels + c] = static_cast<char>(value);
      }
    }
  }
  return pixels;
}

class EncodeJpeg : public ::testing::TestWithParam<uint32_t> {};

TEST_P(EncodeJpeg, DecodesCloseToThePixelsAndSmallerAtLowerQuality) {
  const uint32_t channels = GetParam();
  const ImageShape shape{64, 48, channels};
  const std::string pixels = smooth_pixels(shape, channels);
  const std::string high = encode_jpeg(as_span(pixels), shape, 95);
  const std::string low = encode_jpeg(as_span(pixels), shape, 30);
  ASSERT_EQ(high.substr(0, 3), "\xff\xd8\xff");
  EXPECT_LT(low.size(), high.size());

  const cv::Mat decoded =
      cv::imdecode(std::vector<uint8_t>(high.begin(), high.end()), cv::IMREAD_UNCHANGED);
  ASSERT_EQ(decoded.channels(), static_cast<int>(channels));
  ASSERT_EQ(decoded.cols, 64);
  ASSERT_EQ(decoded.rows, 48);
  const cv::Mat original(48, 64, CV_8UC(static_cast<int>(channels)),
                         const_cast<char*>(pixels.data()));
  cv::Mat difference;
  cv::absdiff(decoded, original, difference);
  // Quality 95 on this noisy ramp: 1.5 (grey) and 1.6 (colour) grey levels on average.
  EXPECT_LT(cv::mean(difference.reshape(1))[0], 4.0);
}

INSTANTIATE_TEST_SUITE_P(Channels, EncodeJpeg, ::testing::Values(1u, 3u));

TEST(EncodeJpegLimits, FourChannelsAndQualityOutOfRangeAreInvalidArgument) {
  const ImageShape bgra{8, 8, 4};
  const std::string pixels(bgra.values(), '\x40');
  EXPECT_THROW((void)encode_jpeg(as_span(pixels), bgra, 90), InvalidArgument);
  EXPECT_THROW(check_output_format(OutputFormat::jpeg, bgra), InvalidArgument);
  EXPECT_NO_THROW(check_output_format(OutputFormat::png, bgra));
  EXPECT_NO_THROW(check_output_format(OutputFormat::jpeg, ImageShape{8, 8, 3}));
  const ImageShape bgr{8, 8, 3};
  const std::string three(bgr.values(), '\x40');
  EXPECT_THROW((void)encode_jpeg(as_span(three), bgr, 0), InvalidArgument);
  EXPECT_THROW((void)encode_jpeg(as_span(three), bgr, 101), InvalidArgument);
}

}  // namespace
}  // namespace svdserve
