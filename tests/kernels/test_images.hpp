#pragma once
// Test inputs for the kernels: seeded random images and real images from SVDSERVE_TEST_IMAGES,
// converted to the backends' planar float 0..255 layout.

#include <opencv2/core.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/image.hpp"

namespace svdserve::test {

// One fresh seed per test run (SVDSERVE_TEST_SEED replays one); put it in a SCOPED_TRACE.
[[nodiscard]] uint64_t run_seed();
[[nodiscard]] std::string seed_text(uint64_t seed);

// Independent uniform values in 0..255.
[[nodiscard]] ImageF32 random_image(ImageShape shape, uint64_t seed);

// Reads a file of SVDSERVE_TEST_IMAGES with cv::imread (flags as there); throws when missing.
[[nodiscard]] cv::Mat read_test_image(const std::string& file_name, int imread_flags);

// The bytes of a file of SVDSERVE_TEST_IMAGES, as stored; throws when missing.
[[nodiscard]] std::vector<uint8_t> read_test_file(const std::string& file_name);

// imencode's JPEG of `image` (parameters as there); throws when OpenCV cannot encode it.
[[nodiscard]] std::vector<uint8_t> encode_jpeg(const cv::Mat& image,
                                               const std::vector<int>& parameters = {});

// 8-bit values as they are, 16-bit scaled by 255/65535; any channel count, planar out.
[[nodiscard]] ImageF32 image_from_mat(const cv::Mat& mat);

// A 16-bit PNG made from an 8-bit image (x * 257 plus random low bits), encoded and decoded again
// so it goes through the same imread path as a 16-bit file.
[[nodiscard]] cv::Mat to_16_bit_png(const cv::Mat& mat_8bit, uint64_t seed);

}  // namespace svdserve::test
