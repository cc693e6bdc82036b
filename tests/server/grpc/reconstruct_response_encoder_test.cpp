#include "server/grpc/reconstruct_response_encoder.hpp"

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

// Sizes around the varint boundaries of the length (1 -> 2 bytes at 128, 3 -> 4 at 2^21).
const std::size_t kSizes[] = {0, 1, 127, 128, (std::size_t{1} << 21) + 5};

std::string random_bytes(std::size_t size, std::mt19937& random) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(byte(random));
  return bytes;
}

v1::ReconstructResponse fields_without_pixels() {
  v1::ReconstructResponse fields;
  fields.set_id("images/cat.jpg");
  fields.mutable_shape()->set_width(1024);
  fields.mutable_shape()->set_height(768);
  fields.mutable_shape()->set_channels(3);
  fields.set_rank(37);
  fields.set_relative_error(0.0123456789);
  fields.set_format(v1::OUTPUT_FORMAT_RAW_F32);
  auto* timings = fields.mutable_timings();
  timings->set_queue_us(12.5);
  timings->set_compute_us(345.25);
  timings->set_total_us(400.0);
  timings->set_batch_size(4);
  return fields;
}

v1::ReconstructResponse parse(const grpc::ByteBuffer& encoded) {
  grpc::ByteBuffer shared(encoded);
  grpc::ProtoBufferReader reader(&shared);
  v1::ReconstructResponse parsed;
  EXPECT_TRUE(parsed.ParseFromZeroCopyStream(&reader));
  return parsed;
}

void expect_equal(const v1::ReconstructResponse& expected, const v1::ReconstructResponse& actual) {
  std::string differences;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(expected, actual)) << differences;
}

class ReconstructResponseEncoderTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  std::unique_ptr<Backend> backend_ = make_cpu_backend({.threads = 1});
  HostBufferPool pool_{*backend_, std::size_t{64} << 20};
  std::mt19937 random_{std::random_device{}()};
};

// Pool memory: the pixels travel in the buffer itself, which goes back when gRPC lets go.
TEST_P(ReconstructResponseEncoderTest, PoolPixelsParseBackToEveryFieldWithoutACopy) {
  const std::size_t size = GetParam();
  const std::string pixels = random_bytes(size, random_);
  HostBuffer buffer = pool_.acquire(size);
  if (size > 0) std::memcpy(buffer.data(), pixels.data(), size);
  const std::byte* const memory = buffer.data();

  v1::ReconstructResponse expected = fields_without_pixels();
  {
    const grpc::ByteBuffer encoded =
        encode_reconstruct_response(expected, PixelBytes(std::move(buffer)));
    expected.set_pixels(pixels);
    EXPECT_EQ(encoded.Length(), expected.ByteSizeLong());
    expect_equal(expected, parse(encoded));
    if (size > 0) {
      std::vector<grpc::Slice> slices;
      ASSERT_TRUE(encoded.Dump(&slices).ok());
      ASSERT_EQ(slices.size(), 2u);
      EXPECT_EQ(static_cast<const void*>(slices[1].begin()), static_cast<const void*>(memory));
      EXPECT_EQ(pool_.stats().in_use_bytes, size);  // held by the encoded message
    }
  }
  EXPECT_EQ(pool_.stats().in_use_bytes, 0u);
}

// A string (PNG output) travels the same way.
TEST_P(ReconstructResponseEncoderTest, StringPixelsParseBackToEveryField) {
  const std::string pixels = random_bytes(GetParam(), random_);
  v1::ReconstructResponse expected = fields_without_pixels();
  expected.set_format(v1::OUTPUT_FORMAT_PNG);
  const grpc::ByteBuffer encoded = encode_reconstruct_response(expected, PixelBytes(pixels));
  expected.set_pixels(pixels);
  EXPECT_EQ(encoded.Length(), expected.ByteSizeLong());
  expect_equal(expected, parse(encoded));
}

INSTANTIATE_TEST_SUITE_P(Sizes, ReconstructResponseEncoderTest, ::testing::ValuesIn(kSizes));

TEST(ReconstructResponseEncoder, OnlyPixelsAndEmptyFieldsAreFine) {
  const grpc::ByteBuffer encoded =
      encode_reconstruct_response(v1::ReconstructResponse(), PixelBytes(std::string("\0\1\2", 3)));
  v1::ReconstructResponse expected;
  expected.set_pixels(std::string("\0\1\2", 3));
  expect_equal(expected, parse(encoded));
}

TEST(ReconstructResponseEncoder, FieldsThatCarryPixelsAreRefused) {
  v1::ReconstructResponse fields;
  fields.set_pixels("already here");
  EXPECT_THROW((void)encode_reconstruct_response(fields, PixelBytes(std::string("x"))),
               InternalError);
}

}  // namespace
}  // namespace svdserve
