// JPEG decoding on the device (nvJPEG, loaded at run time) against OpenCV's decode of the same
// bytes, on real photos and on the variants encoders produce: grey, 4:4:4 and 4:2:0, restart
// markers, odd sizes (OpenCV's encoder writes 4:2:0 colour; the photos bring their own). Skips without a CUDA device; where there is one, nvJPEG must load.
#include "kernels/gpu/jpeg/jpeg_decoder.hpp"

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/gpu_backend.hpp"
#include "test_images.hpp"

namespace svdserve {
namespace {

using test::encode_jpeg;

std::span<const std::byte> as_bytes(const std::vector<uint8_t>& bytes) {
  return std::as_bytes(std::span(bytes));
}

class GpuJpegDecoder : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    SVDSERVE_CUDA_CHECK(cudaSetDevice(0));
    std::string why;
    decoder_ = gpu::JpegDecoder::create(why);
    ASSERT_TRUE(decoder_) << "nvJPEG did not load on a GPU host: " << why;
    state_ = decoder_->make_stream_state();
    stream_.emplace();
  }

  // The device's decode of `bytes`, copied back: height x width x channels, HWC.
  cv::Mat decode_on_device(const std::vector<uint8_t>& bytes) {
    const std::optional<JpegHeader> header = read_jpeg_header(as_bytes(bytes));
    EXPECT_TRUE(header);
    if (!header) return {};
    EXPECT_TRUE(gpu::JpegDecoder::takes(*header));
    const int type = header->components == 1 ? CV_8UC1 : CV_8UC3;
    cv::Mat decoded(static_cast<int>(header->height), static_cast<int>(header->width), type);
    gpu::DeviceBuffer samples;
    samples.grow_to(decoded.total() * decoded.elemSize());
    const gpu::JpegToDecode jpeg{as_bytes(bytes), samples.as<std::byte>()};
    decoder_->decode(*state_, std::span(&jpeg, 1), header->width, header->components,
                     stream_->view().value());
    SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(decoded.data, samples.data(),
                                        decoded.total() * decoded.elemSize(),
                                        cudaMemcpyDeviceToHost, stream_->view().value()));
    stream_->view().synchronize();
    return decoded;
  }

  // Share of values within one level of OpenCV's decode; prints the figure.
  double share_within_one_level(const std::vector<uint8_t>& bytes, const std::string& name) {
    const cv::Mat device = decode_on_device(bytes);
    const cv::Mat host = cv::imdecode(bytes, cv::IMREAD_UNCHANGED);
    EXPECT_EQ(device.size(), host.size()) << name;
    EXPECT_EQ(device.type(), host.type()) << name;
    if (device.size() != host.size() || device.type() != host.type()) return 0.0;
    cv::Mat difference;
    cv::absdiff(device, host, difference);
    const cv::Mat flat = difference.reshape(1);
    const double within = static_cast<double>(cv::countNonZero(flat <= 1)) / flat.total();
    double largest = 0.0;
    cv::minMaxLoc(flat, nullptr, &largest);
    std::cout << "[ jpeg ] " << name << " " << host.cols << "x" << host.rows << "x"
              << host.channels() << ": " << 100.0 * within
              << " % of values within one level of OpenCV, largest difference " << largest
              << "\n";
    return within;
  }

  std::optional<gpu::Stream> stream_;  // made in SetUp, once a device is known to be there
  std::unique_ptr<gpu::JpegDecoder> decoder_;
  std::unique_ptr<gpu::JpegStreamState> state_;
};

// The accuracy bar: JPEG decoders may differ in IDCT and chroma upsampling by a level here and
// there; 99.9 % of values within one level of OpenCV (libjpeg-turbo) is what users see as equal.
constexpr double kWithinOneLevel = 0.999;

TEST_F(GpuJpegDecoder, RealPhotosMatchOpenCv) {
  for (const char* file : {"aero1.jpg", "baboon.jpg", "building.jpg", "butterfly.jpg",
                           "fruits.jpg", "home.jpg", "messi5.jpg"}) {
    const std::vector<uint8_t> bytes = test::read_test_file(file);
    EXPECT_GE(share_within_one_level(bytes, file), kWithinOneLevel) << file;
  }
}

TEST_F(GpuJpegDecoder, GreyRestartMarkersAndOddSizesMatchOpenCv) {
  const cv::Mat photo = test::read_test_image("fruits.jpg", cv::IMREAD_COLOR);
  cv::Mat odd;
  cv::resize(photo, odd, cv::Size(333, 257), 0, 0, cv::INTER_AREA);
  cv::Mat grey;
  cv::cvtColor(odd, grey, cv::COLOR_BGR2GRAY);
  const struct {
    const char* name;
    std::vector<uint8_t> bytes;
  } cases[] = {
      {"grey", encode_jpeg(grey)},
      {"4:2:0", encode_jpeg(odd)},
      {"restart markers", encode_jpeg(odd, {cv::IMWRITE_JPEG_RST_INTERVAL, 3})},
      {"quality 100", encode_jpeg(odd, {cv::IMWRITE_JPEG_QUALITY, 100})},
  };
  for (const auto& c : cases) {
    EXPECT_GE(share_within_one_level(c.bytes, c.name), kWithinOneLevel) << c.name;
  }
}

// Entropy-coded data cut short behind an intact end marker: like libjpeg, nvJPEG decodes what is
// there (damaged headers and tables never reach it: JpegDecoder::takes, tests/kernels/
// jpeg_header_test.cpp). The decoder must come through and keep decoding correctly.
TEST_F(GpuJpegDecoder, CutEntropyDataDecodesAndTheDecoderKeepsWorking) {
  const cv::Mat photo = test::read_test_image("baboon.jpg", cv::IMREAD_COLOR);
  const std::vector<uint8_t> good = encode_jpeg(photo);
  for (const std::size_t keep : {good.size() / 3, good.size() / 2, good.size() - 100}) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(keep));
    cut.insert(cut.end(), {0xFF, 0xD9});
    try {
      (void)decode_on_device(cut);
    } catch (const InvalidArgument&) {
      // nvJPEG may also notice: either way the request gets an answer and nothing breaks.
    }
  }
  EXPECT_GE(share_within_one_level(good, "after cut files"), kWithinOneLevel);
}

TEST_F(GpuJpegDecoder, ABatchDecodesEveryImageIntoItsOwnBuffer) {
  const cv::Mat photo = test::read_test_image("home.jpg", cv::IMREAD_COLOR);
  std::vector<std::vector<uint8_t>> files;
  std::vector<cv::Mat> expected;
  for (int quality : {50, 70, 90, 95, 99}) {
    files.push_back(encode_jpeg(photo, {cv::IMWRITE_JPEG_QUALITY, quality}));
    expected.push_back(cv::imdecode(files.back(), cv::IMREAD_UNCHANGED));
  }
  const std::size_t image_bytes = photo.total() * photo.elemSize();
  gpu::DeviceBuffer samples;
  samples.grow_to(image_bytes * files.size());
  std::vector<gpu::JpegToDecode> jpegs;
  for (std::size_t i = 0; i < files.size(); ++i) {
    jpegs.push_back({as_bytes(files[i]), samples.as<std::byte>() + i * image_bytes});
  }
  decoder_->decode(*state_, jpegs, static_cast<uint32_t>(photo.cols), 3, stream_->view().value());
  std::vector<uint8_t> host(image_bytes * files.size());
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(host.data(), samples.data(), host.size(),
                                      cudaMemcpyDeviceToHost, stream_->view().value()));
  stream_->view().synchronize();
  for (std::size_t i = 0; i < files.size(); ++i) {
    const cv::Mat device(photo.rows, photo.cols, CV_8UC3, host.data() + i * image_bytes);
    cv::Mat difference;
    cv::absdiff(device, expected[i], difference);
    const cv::Mat flat = difference.reshape(1);
    EXPECT_GE(static_cast<double>(cv::countNonZero(flat <= 1)) / flat.total(), kWithinOneLevel)
        << "image " << i;
  }
}

TEST(GpuJpegDecoderRouting, TakesSequential8BitGreyOrColourOnly) {
  JpegHeader header{.width = 64, .height = 64, .components = 3, .precision = 8,
                    .coding = JpegCoding::baseline, .complete = true, .well_formed = true};
  EXPECT_TRUE(gpu::JpegDecoder::takes(header));
  header.components = 1;
  EXPECT_TRUE(gpu::JpegDecoder::takes(header));
  JpegHeader cmyk = header;
  cmyk.components = 4;
  EXPECT_FALSE(gpu::JpegDecoder::takes(cmyk));
  JpegHeader progressive = header;
  progressive.coding = JpegCoding::progressive;
  EXPECT_FALSE(gpu::JpegDecoder::takes(progressive));
  JpegHeader twelve_bit = header;
  twelve_bit.precision = 12;
  EXPECT_FALSE(gpu::JpegDecoder::takes(twelve_bit));
  JpegHeader truncated = header;
  truncated.complete = false;
  EXPECT_FALSE(gpu::JpegDecoder::takes(truncated));
  JpegHeader damaged = header;
  damaged.well_formed = false;
  EXPECT_FALSE(gpu::JpegDecoder::takes(damaged));
}

// Through the backend: a JPEG decoded on the device decomposes like OpenCV's decode of it.
TEST(GpuJpegBackend, DecomposesAJpegLikeItsHostDecode) {
  if (!gpu::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  gpu::GpuBackendOptions options;
  options.streams = 1;
  options.budget_bytes = std::size_t{256} << 20;
  const std::unique_ptr<Backend> backend = gpu::make_gpu_backend(options);
  const std::vector<uint8_t> bytes = test::read_test_file("messi5.jpg");
  const std::optional<JpegHeader> header = read_jpeg_header(as_bytes(bytes));
  ASSERT_TRUE(header);
  ASSERT_TRUE(backend->decodes_jpeg(*header));

  DecodedImage on_device;
  on_device.shape = {header->width, header->height, header->components};
  on_device.jpeg.assign(as_bytes(bytes).begin(), as_bytes(bytes).end());
  const cv::Mat host = cv::imdecode(bytes, cv::IMREAD_UNCHANGED);
  DecodedImage on_host;
  on_host.shape = on_device.shape;
  const auto* first = reinterpret_cast<const std::byte*>(host.data);
  on_host.samples.assign(first, first + host.total() * host.elemSize());

  constexpr uint32_t kRank = 32;
  const DecodedImage* batch[] = {&on_device, &on_host};
  const auto factors = backend->decompose(std::span<const DecodedImage* const>(batch), kRank);
  ASSERT_EQ(factors.size(), 2U);
  for (uint32_t c = 0; c < on_host.shape.channels; ++c) {
    const std::span<const float> device = factors[0]->singular_values(c);
    const std::span<const float> reference = factors[1]->singular_values(c);
    // One-level decode differences move the top singular values by far less than 0.1 %.
    EXPECT_NEAR(device[0], reference[0], 1e-3 * reference[0]) << "channel " << c;
    EXPECT_NEAR(device[kRank / 2], reference[kRank / 2], 1e-2 * reference[kRank / 2]);
  }
}

}  // namespace
}  // namespace svdserve
