// Echo against a real server: the sizes asked for come back, the payload comes back first, and
// a size above the message limit is refused with a message that says what to change. Then
// `svdserve-cli bench --sweep` end to end: reconstruct and echo of the same sizes.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "process.hpp"
#include "server_fixture.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kHeadroomBytes = 64 * 1024;  // What Echo leaves below max_message_bytes.

v1::EchoRequest echo_request(std::string payload, std::uint64_t response_bytes) {
  v1::EchoRequest request;
  request.set_payload(std::move(payload));
  request.set_response_bytes(response_bytes);
  return request;
}

class EchoTest : public ServerFixture, public ::testing::WithParamInterface<std::uint64_t> {};

// Sizes of real responses: nothing, a few bytes, 256², 512² and 1024² RGB u8 images.
INSTANTIATE_TEST_SUITE_P(ResponseSizes, EchoTest,
                         ::testing::Values(0, 5, 256 * 256 * 3, 512 * 512 * 3, 1024 * 1024 * 3));

TEST_P(EchoTest, AnswersTheSizeAskedWithThePayloadFirstThenZeros) {
  start();
  const std::uint64_t size = GetParam();
  const std::string payload = "bench-baboon request bytes";
  const auto echoed = client_->echo(echo_request(payload, size));
  ASSERT_TRUE(echoed.ok()) << echoed.status().error_message();
  const std::string& answer = echoed->payload();
  ASSERT_EQ(answer.size(), size);
  const std::size_t copied = std::min<std::size_t>(size, payload.size());
  EXPECT_EQ(answer.substr(0, copied), payload.substr(0, copied));
  EXPECT_EQ(answer.find_first_not_of('\0', copied), std::string::npos);
}

using EchoLimitTest = ServerFixture;

TEST_F(EchoLimitTest, TheLargestAllowedSizeIsAnswered) {
  v1::ServerConfig config = test_config();
  config.set_max_message_bytes(2 * kMiB);
  config.set_max_image_bytes(kMiB);
  start(config);
  const auto echoed = client_->echo(echo_request("x", 2 * kMiB - kHeadroomBytes));
  ASSERT_TRUE(echoed.ok()) << echoed.status().error_message();
  EXPECT_EQ(echoed->payload().size(), 2 * kMiB - kHeadroomBytes);
}

TEST_F(EchoLimitTest, AboveTheMessageLimitIsInvalidArgumentNamingTheSetting) {
  v1::ServerConfig config = test_config();
  config.set_max_message_bytes(2 * kMiB);
  config.set_max_image_bytes(kMiB);
  start(config);
  const auto echoed = client_->echo(echo_request("x", 2 * kMiB - kHeadroomBytes + 1));
  ASSERT_FALSE(echoed.ok());
  EXPECT_EQ(echoed.status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const std::string message = echoed.status().error_message();
  EXPECT_NE(message.find("response_bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("max_message_bytes"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(2 * kMiB - kHeadroomBytes)), std::string::npos) << message;
}

TEST_F(EchoLimitTest, ARequestAboveTheServersReceiveLimitIsRefusedByGrpc) {
  v1::ServerConfig config = test_config();
  config.set_max_message_bytes(2 * kMiB);
  config.set_max_image_bytes(kMiB);
  start(config);
  const auto echoed = client_->echo(echo_request(std::string(3 * kMiB, 'x'), 0));
  ASSERT_FALSE(echoed.ok());
  EXPECT_EQ(echoed.status().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

using BenchSweepTest = ServerFixture;

// The real CLI against the real server: a two-level sweep of reconstruct and its echo, with the
// echo sized like the reconstruction (512x512x3 u8 pixels) and every call answered.
TEST_F(BenchSweepTest, SweepsReconstructAgainstEchoOfTheSameSizes) {
  start();
  const std::string image = std::string(svdserve::test::test_images_dir()) + "/baboon.jpg";
  const auto result = run_process(svdserve::test::cli_binary(),
                                  {"--server", target(), "bench", "--image", image, "--rank", "8", "--max-rank", "16",
                                   "--sweep", "1,2", "--count", "6", "--json", "-"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const std::string& json = result.out;
  EXPECT_NE(json.find("\"op\": \"echo\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"concurrency\": 2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"succeeded\": 6"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"succeeded\": 0"), std::string::npos) << json;
  EXPECT_NE(json.find("op_to_echo_ratio"), std::string::npos) << json;
  // The response carries 512*512*3 pixel bytes plus a few fields; echo's is the same size.
  const auto response_bytes_at = json.find("\"response_bytes\": ");
  ASSERT_NE(response_bytes_at, std::string::npos) << json;
  const std::uint64_t response_bytes = std::stoull(json.substr(response_bytes_at + 18));
  EXPECT_GT(response_bytes, 512u * 512u * 3u);
  EXPECT_LT(response_bytes, 512u * 512u * 3u + 256u);
  // Both runs of a row report the same response size.
  std::size_t occurrences = 0;
  const std::string needle = "\"response_bytes\": " + std::to_string(response_bytes);
  for (auto at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) ++occurrences;
  EXPECT_EQ(occurrences, 1u + 2u * 2u) << json;  // The header and both runs of both rows.
}

// The stream op against the real server: each request is one ReconstructStream of 3 items, and
// the echo beside it is sized like one item's answer.
TEST_F(BenchSweepTest, SweepsStreamAgainstEchoOfOneItem) {
  start();
  const std::string image = std::string(svdserve::test::test_images_dir()) + "/baboon.jpg";
  const auto result = run_process(svdserve::test::cli_binary(),
                                  {"--server", target(), "bench", "--op", "stream", "--stream-items", "3", "--image",
                                   image, "--rank", "8", "--max-rank", "16", "--sweep", "1,2", "--count", "4",
                                   "--json", "-"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const std::string& json = result.out;
  EXPECT_NE(json.find("\"op\": \"stream\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"op\": \"echo\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"images_per_request\": 3"), std::string::npos) << json;
  EXPECT_NE(json.find("\"succeeded\": 4"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"succeeded\": 0"), std::string::npos) << json;
}

}  // namespace
}  // namespace svdserve::testing
