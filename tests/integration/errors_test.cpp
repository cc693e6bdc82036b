// Bad requests get the right status and a message a user can act on, and the server keeps
// serving afterwards.

#include <gtest/gtest.h>

#include "server_fixture.hpp"

namespace svdserve::testing {
namespace {

class ErrorsTest : public ServerFixture {
 protected:
  void SetUp() override {
    v1::ServerConfig config = test_config();
    config.set_max_image_width(1024);
    config.set_max_image_height(1024);
    config.set_max_rank(256);
    config.set_default_max_rank(64);
    config.set_max_message_bytes(8u << 20);
    config.set_max_image_bytes(4u << 20);
    start(config);
    ASSERT_TRUE(client_->decompose(read_test_image("baboon.jpg"), 64, "baboon").ok());
  }

  // After every failure the server still answers a good request.
  void expect_still_serving() {
    auto good = client_->reconstruct("baboon", Rank{8});
    EXPECT_TRUE(good.ok()) << good.status().error_message();
  }

  static void expect_status(const grpc::Status& status, grpc::StatusCode code,
                            const std::string& message_part) {
    EXPECT_EQ(status.error_code(), code) << status.error_message();
    EXPECT_NE(status.error_message().find(message_part), std::string::npos)
        << "message: " << status.error_message();
  }
};

v1::DecomposeRequest raw(uint32_t width, uint32_t height, uint32_t channels, std::size_t bytes) {
  v1::DecomposeRequest request;
  auto* image = request.mutable_image()->mutable_raw();
  image->set_width(width);
  image->set_height(height);
  image->set_channels(channels);
  image->set_type(v1::PIXEL_TYPE_U8);
  image->set_data(std::string(bytes, '\x40'));
  return request;
}

TEST_F(ErrorsTest, UndecodableBytesAreInvalidArgument) {
  expect_status(client_->decompose("this is not an image").status(),
                grpc::StatusCode::INVALID_ARGUMENT, "not a PNG, JPEG");
  std::string truncated = read_test_image("pic1.png").substr(0, 100);
  EXPECT_EQ(client_->decompose(truncated).status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  expect_status(client_->decompose(v1::DecomposeRequest{}).status(),
                grpc::StatusCode::INVALID_ARGUMENT, "no image");
  expect_still_serving();
}

TEST_F(ErrorsTest, UnknownIdIsNotFound) {
  expect_status(client_->reconstruct("nobody", Rank{1}).status(), grpc::StatusCode::NOT_FOUND,
                "nobody");
  expect_still_serving();
}

TEST_F(ErrorsTest, RankZeroOrAboveKeptIsInvalidArgument) {
  expect_status(client_->reconstruct("baboon", Rank{0}).status(),
                grpc::StatusCode::INVALID_ARGUMENT, "at least 1");
  expect_status(client_->reconstruct("baboon", Rank{65}).status(),
                grpc::StatusCode::INVALID_ARGUMENT, "max_rank");
  expect_status(client_->reconstruct("baboon", EnergyFraction{1.5}).status(),
                grpc::StatusCode::INVALID_ARGUMENT, "energy_fraction");
  expect_status(client_->decompose(read_test_image("fruits.jpg"), 257).status(),
                grpc::StatusCode::INVALID_ARGUMENT, "limit");
  expect_still_serving();
}

TEST_F(ErrorsTest, OversizedImageIsInvalidArgument) {
  expect_status(client_->decompose(raw(1025, 8, 1, 1025 * 8)).status(),
                grpc::StatusCode::INVALID_ARGUMENT, "1024x1024");
  expect_still_serving();
}

TEST_F(ErrorsTest, RawSizeMismatchIsInvalidArgument) {
  expect_status(client_->decompose(raw(10, 10, 3, 299)).status(),
                grpc::StatusCode::INVALID_ARGUMENT, "299 bytes");
  expect_status(client_->decompose(raw(10, 10, 5, 500)).status(),
                grpc::StatusCode::INVALID_ARGUMENT, "channels");
  expect_still_serving();
}

TEST_F(ErrorsTest, MessagesOverTheLimitAreResourceExhausted) {
  // 9 MiB request against an 8 MiB max_message_bytes: refused by gRPC itself.
  EXPECT_EQ(client_->decompose(raw(3072, 1024, 3, 3072 * 1024 * 3)).status().error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  // A response over the limit: 1024x1024x3 as f32 is 12 MiB.
  v1::DecomposeRequest big = raw(1024, 1024, 3, 1024 * 1024 * 3);
  big.set_id("big");
  big.set_max_rank(2);
  ASSERT_TRUE(client_->decompose(big).ok());
  expect_status(client_->reconstruct("big", Rank{1}, v1::OUTPUT_FORMAT_RAW_F32).status(),
                grpc::StatusCode::RESOURCE_EXHAUSTED, "PNG");
  EXPECT_TRUE(client_->reconstruct("big", Rank{1}, v1::OUTPUT_FORMAT_RAW_U8).ok());
  expect_still_serving();
}

TEST_F(ErrorsTest, UnknownFormatIsInvalidArgument) {
  v1::ReconstructRequest request;
  request.set_id("baboon");
  request.set_rank(1);
  request.set_format(static_cast<v1::OutputFormat>(42));
  expect_status(client_->reconstruct(request).status(), grpc::StatusCode::INVALID_ARGUMENT,
                "format");
  expect_still_serving();
}

}  // namespace
}  // namespace svdserve::testing
