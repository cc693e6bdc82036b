#include "tests/test_paths.hpp"
#include "test_images.hpp"

#include <opencv2/imgcodecs.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <vector>

namespace svdserve::test {
namespace {

constexpr float kMaxU8 = 255.0F;
constexpr float kMaxU16 = 65535.0F;
constexpr int kU8ToU16 = 257;  // 255 * 257 = 65535

uint64_t make_run_seed() {
  if (const char* replay = std::getenv("SVDSERVE_TEST_SEED")) return std::stoull(replay);
  std::random_device device;
  return (uint64_t{device()} << 32) | device();
}

template <class T>
void copy_planar(const cv::Mat& mat, float scale, ImageF32& image) {
  const uint32_t channels = image.shape.channels;
  for (uint32_t y = 0; y < image.shape.height; ++y) {
    const T* row = mat.ptr<T>(static_cast<int>(y));
    for (uint32_t x = 0; x < image.shape.width; ++x) {
      for (uint32_t c = 0; c < channels; ++c) {
        image.plane(c)[std::size_t{y} * image.shape.width + x] =
            static_cast<float>(row[std::size_t{x} * channels + c]) * scale;
      }
    }
  }
}

}  // namespace

uint64_t run_seed() {
  static const uint64_t seed = make_run_seed();
  return seed;
}

std::string seed_text(uint64_t seed) {
  return "random seed " + std::to_string(seed) +
         " (replay with SVDSERVE_TEST_SEED=" + std::to_string(seed) + ")";
}

ImageF32 random_image(ImageShape shape, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<float> value(0.0F, kMaxU8);
  ImageF32 image{shape, std::vector<float>(shape.values())};
  for (float& v : image.planes) v = value(generator);
  return image;
}

cv::Mat read_test_image(const std::string& file_name, int imread_flags) {
  const std::string path = std::string(svdserve::test::test_images_dir()) + "/" + file_name;
  cv::Mat mat = cv::imread(path, imread_flags);
  if (mat.empty()) throw std::runtime_error("cannot read test image " + path);
  return mat;
}

std::vector<uint8_t> read_test_file(const std::string& file_name) {
  const std::string path = std::string(svdserve::test::test_images_dir()) + "/" + file_name;
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read test file " + path);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> encode_jpeg(const cv::Mat& image, const std::vector<int>& parameters) {
  std::vector<uint8_t> bytes;
  if (!cv::imencode(".jpg", image, bytes, parameters)) {
    throw std::runtime_error("OpenCV could not encode a JPEG");
  }
  return bytes;
}

ImageF32 image_from_mat(const cv::Mat& mat) {
  ImageF32 image;
  image.shape = {static_cast<uint32_t>(mat.cols), static_cast<uint32_t>(mat.rows),
                 static_cast<uint32_t>(mat.channels())};
  image.planes.resize(image.shape.values());
  switch (mat.depth()) {
    case CV_8U:
      copy_planar<uint8_t>(mat, 1.0F, image);
      break;
    case CV_16U:
      copy_planar<uint16_t>(mat, kMaxU8 / kMaxU16, image);
      break;
    default:
      throw std::runtime_error("test images must be 8- or 16-bit");
  }
  return image;
}

cv::Mat to_16_bit_png(const cv::Mat& mat_8bit, uint64_t seed) {
  cv::Mat wide;
  mat_8bit.convertTo(wide, CV_16U, kU8ToU16);
  cv::Mat low_bits(wide.size(), wide.type());
  cv::RNG(seed).fill(low_bits, cv::RNG::UNIFORM, 0, kU8ToU16);
  cv::Mat detailed;
  cv::add(wide, low_bits, detailed, cv::noArray(), CV_16U);  // saturates at 65535
  std::vector<uchar> png;
  cv::imencode(".png", detailed, png);
  return cv::imdecode(png, cv::IMREAD_UNCHANGED);
}

}  // namespace svdserve::test
