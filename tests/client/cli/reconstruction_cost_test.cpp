// The figures under a contact sheet's tiles: bytes of factors kept and the relative error.

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include <opencv2/core.hpp>

#include "client/cli/reconstruction_cost.hpp"

namespace svdserve::cli {
namespace {

TEST(ReconstructionCost, FactorBytesCountUSAndVtOfEveryChannel) {
  // 4 bytes x 3 channels x rank 10 x (480 + 640 + 1).
  EXPECT_EQ(factor_bytes(640, 480, 3, 10), 4u * 3u * 10u * 1121u);
  EXPECT_EQ(factor_bytes(640, 480, 3, 0), 0u);
  EXPECT_EQ(pixel_bytes(640, 480, 3), 921600u);
}

// Against a float64 sum written out by hand.
TEST(ReconstructionCost, RelativeErrorOnRandomPixels) {
  cv::Mat original(37, 53, CV_8UC3);
  cv::Mat reconstruction(37, 53, CV_8UC3);
  cv::RNG rng(7);
  rng.fill(original, cv::RNG::UNIFORM, 0, 256);
  rng.fill(reconstruction, cv::RNG::UNIFORM, 0, 256);
  double difference = 0;
  double norm = 0;
  for (int y = 0; y < original.rows; ++y) {
    for (int x = 0; x < original.cols; ++x) {
      for (int c = 0; c < 3; ++c) {
        const double a = original.at<cv::Vec3b>(y, x)[c];
        const double b = reconstruction.at<cv::Vec3b>(y, x)[c];
        difference += (a - b) * (a - b);
        norm += a * a;
      }
    }
  }
  EXPECT_NEAR(relative_error(original, reconstruction), std::sqrt(difference / norm), 1e-12);
  EXPECT_EQ(relative_error(original, original), 0.0);
}

TEST(ReconstructionCost, ZerosAndMismatchedShapes) {
  const cv::Mat zeros = cv::Mat::zeros(4, 4, CV_8UC1);
  EXPECT_EQ(relative_error(zeros, zeros), 0.0);
  EXPECT_TRUE(std::isinf(relative_error(zeros, cv::Mat::ones(4, 4, CV_8UC1))));
  EXPECT_THROW(static_cast<void>(relative_error(zeros, cv::Mat::zeros(4, 5, CV_8UC1))), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(relative_error(zeros, cv::Mat::zeros(4, 4, CV_8UC3))), std::invalid_argument);
}

}  // namespace
}  // namespace svdserve::cli
