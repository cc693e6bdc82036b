// Echo requests sized like real calls: the serialized sizes are what was asked, to the byte
// where protobuf's length prefixes allow it and never above.

#include <gtest/gtest.h>

#include <string>

#include "client/loadgen/echo_sizing.hpp"

namespace svdserve::loadgen {
namespace {

std::size_t serialized_bytes_field(std::size_t payload) {
  v1::EchoResponse response;
  response.set_payload(std::string(payload, 'x'));
  return response.ByteSizeLong();
}

TEST(EchoSizing, PayloadFillsTheFieldAndNeverOverflowsIt) {
  for (std::size_t field = 0; field < 20000; ++field) {
    const std::size_t payload = bytes_field_payload_for(field);
    EXPECT_LE(serialized_bytes_field(payload), field) << field;
    // One more byte would not fit: the payload is the largest.
    EXPECT_GT(serialized_bytes_field(payload + 1), field) << field;
  }
}

// Sizes of real calls: reconstruct requests of a few bytes, 256², 512², 1024² u8 and f32 answers.
class EchoRequestMatching : public ::testing::TestWithParam<std::pair<std::size_t, std::size_t>> {};

INSTANTIATE_TEST_SUITE_P(RealSizes, EchoRequestMatching,
                         ::testing::Values(std::pair<std::size_t, std::size_t>{18, 196683},
                                           std::pair<std::size_t, std::size_t>{25, 786504},
                                           std::pair<std::size_t, std::size_t>{30, 3145800},
                                           std::pair<std::size_t, std::size_t>{30, 4 * 3145728 + 80},
                                           std::pair<std::size_t, std::size_t>{200000, 200},
                                           std::pair<std::size_t, std::size_t>{3145745, 196683}));

TEST_P(EchoRequestMatching, SerializedSizesMatchTheRealCallWithinAByte) {
  const auto [request_bytes, response_bytes] = GetParam();
  const std::string real_request = "\x0a\x0c" "bench-baboon\x10\x10\x20\x01";
  const v1::EchoRequest request = echo_request_matching(real_request, request_bytes, response_bytes);
  EXPECT_LE(request.ByteSizeLong(), request_bytes);
  EXPECT_GE(request.ByteSizeLong() + 1, request_bytes);
  const std::size_t answer = echo_response_wire_bytes(request);
  EXPECT_LE(answer, response_bytes);
  EXPECT_GE(answer + 1, response_bytes);
  EXPECT_EQ(answer, serialized_bytes_field(request.response_bytes()));
}

TEST(EchoSizing, PayloadIsTheRealRequestRepeated) {
  const v1::EchoRequest request = echo_request_matching("abc", 40, 10);
  ASSERT_GE(request.payload().size(), 6u);
  EXPECT_EQ(request.payload().substr(0, 6), "abcabc");
}

TEST(EchoSizing, ARequestSmallerThanEchosOwnFieldsGetsAnEmptyPayload) {
  const v1::EchoRequest request = echo_request_matching("abc", 2, 3145800);
  EXPECT_TRUE(request.payload().empty());
  EXPECT_GT(request.response_bytes(), 0u);
}

TEST(EchoSizing, NoResponseAsksForNothing) {
  const v1::EchoRequest request = echo_request_matching("abc", 10, 0);
  EXPECT_EQ(request.response_bytes(), 0u);
  EXPECT_EQ(echo_response_wire_bytes(request), 0u);
  EXPECT_EQ(request.ByteSizeLong(), 10u);
}

}  // namespace
}  // namespace svdserve::loadgen
