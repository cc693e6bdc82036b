#include "server/grpc/request_translation.hpp"

#include <gtest/gtest.h>
#include <grpcpp/support/slice.h>

#include <chrono>
#include <string>
#include <variant>

#include "kernels/errors.hpp"
#include "server/grpc/response_fields.hpp"

namespace svdserve {
namespace {

using namespace std::chrono_literals;

TEST(RequestTranslation, EncodedBytesAreViewedNotCopied) {
  v1::ImageInput input;
  input.set_encoded("\x89PNG...");
  const ImageSource source = image_source_of(input);
  const auto* encoded = std::get_if<EncodedImage>(&source);
  ASSERT_NE(encoded, nullptr);
  EXPECT_EQ(static_cast<const void*>(encoded->bytes.data()),
            static_cast<const void*>(input.encoded().data()));
  EXPECT_EQ(encoded->bytes.size(), input.encoded().size());
}

TEST(RequestTranslation, RawPixelsKeepTheirShapeAndType) {
  struct Case {
    v1::PixelType type;
    std::optional<SampleType> expected;
  };
  for (const Case c : {Case{v1::PIXEL_TYPE_U8, SampleType::u8},
                       Case{v1::PIXEL_TYPE_U16, SampleType::u16},
                       Case{v1::PIXEL_TYPE_F32, SampleType::f32},
                       Case{v1::PIXEL_TYPE_UNSPECIFIED, std::nullopt},
                       Case{static_cast<v1::PixelType>(42), std::nullopt}}) {
    SCOPED_TRACE(static_cast<int>(c.type));
    v1::ImageInput input;
    v1::RawImage* raw = input.mutable_raw();
    raw->set_width(3);
    raw->set_height(2);
    raw->set_channels(4);
    raw->set_type(c.type);
    raw->set_data(std::string(24, '\7'));
    const ImageSource source = image_source_of(input);
    const auto* pixels = std::get_if<RawPixels>(&source);
    ASSERT_NE(pixels, nullptr);
    EXPECT_EQ(pixels->width, 3u);
    EXPECT_EQ(pixels->height, 2u);
    EXPECT_EQ(pixels->channels, 4u);
    EXPECT_EQ(pixels->type, c.expected);
    EXPECT_EQ(static_cast<const void*>(pixels->samples.data()),
              static_cast<const void*>(raw->data().data()));
    EXPECT_EQ(pixels->samples.size(), 24u);
  }
}

TEST(RequestTranslation, NoImageIsNothing) {
  EXPECT_TRUE(std::holds_alternative<std::monostate>(image_source_of(v1::ImageInput())));
}

TEST(RequestTranslation, OutputFormatsRoundTripAndUnspecifiedIsRawU8) {
  EXPECT_EQ(output_format_of(v1::OUTPUT_FORMAT_UNSPECIFIED), OutputFormat::raw_u8);
  for (v1::OutputFormat format :
       {v1::OUTPUT_FORMAT_RAW_U8, v1::OUTPUT_FORMAT_PNG, v1::OUTPUT_FORMAT_RAW_F32,
        v1::OUTPUT_FORMAT_JPEG}) {
    EXPECT_EQ(to_proto(output_format_of(format)), format);
  }
  try {
    (void)output_format_of(static_cast<v1::OutputFormat>(17));
    FAIL() << "format 17 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "unknown output format 17");
  }
}

TEST(RequestTranslation, JpegQualityZeroIsTheDefaultAndAbove100IsRefused) {
  EXPECT_EQ(jpeg_quality_of(0), kDefaultJpegQuality);
  EXPECT_EQ(jpeg_quality_of(1), 1u);
  EXPECT_EQ(jpeg_quality_of(100), 100u);
  try {
    (void)jpeg_quality_of(101);
    FAIL() << "quality 101 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("jpeg_quality is 101; use 1..100"), std::string::npos)
        << e.what();
  }
}

TEST(RequestTranslation, EnergyFractionOnlyWhenChosen) {
  v1::ReconstructRequest request;
  request.set_rank(5);
  EXPECT_EQ(energy_fraction_of(request), std::nullopt);
  request.set_energy_fraction(0.0);  // chosen, even at 0: the validator refuses it
  EXPECT_EQ(energy_fraction_of(request), 0.0);
  v1::CompressRequest compress;
  compress.set_energy_fraction(0.75);
  EXPECT_EQ(energy_fraction_of(compress), 0.75);
}

TEST(RequestTranslation, DeadlinesMoveToTheSteadyClock) {
  EXPECT_EQ(to_steady_deadline(std::chrono::system_clock::time_point::max()),
            Clock::time_point::max());
  const Clock::time_point before = Clock::now();
  const Clock::time_point deadline = to_steady_deadline(std::chrono::system_clock::now() + 10s);
  const Clock::time_point after = Clock::now();
  EXPECT_GE(deadline, before + 10s);
  EXPECT_LE(deadline, after + 10s);
}

TEST(RequestTranslation, MalformedRawRequestsAreInvalidArgument) {
  v1::ReconstructRequest request;
  request.set_id("cat");
  request.set_rank(3);
  const grpc::Slice good(request.SerializeAsString());
  const v1::ReconstructRequest parsed = parse_reconstruct_request(grpc::ByteBuffer(&good, 1));
  EXPECT_EQ(parsed.id(), "cat");
  EXPECT_EQ(parsed.rank(), 3u);
  EXPECT_EQ(parse_reconstruct_request(grpc::ByteBuffer()).id(), "") << "no bytes: empty message";

  const grpc::Slice truncated(std::string("\x0a\x05" "ab", 4));
  EXPECT_THROW((void)parse_reconstruct_request(grpc::ByteBuffer(&truncated, 1)), InvalidArgument);
}

TEST(RequestTranslation, ImageIdsAreCheckedWithoutBeingEchoed) {
  EXPECT_NO_THROW(check_image_id(""));  // Decompose: the server names it
  EXPECT_NO_THROW(check_image_id("cat.jpg"));
  EXPECT_NO_THROW(check_image_id(std::string(kMaxImageIdBytes, 'x')));
  EXPECT_NO_THROW(check_image_id("photos/été.jpg"));
  for (const std::string& bad : {std::string(kMaxImageIdBytes + 1, 'x'), std::string(10240, 'x'),
                                 std::string("a\nb"), std::string("a\0b", 3),
                                 std::string("a\x7f")}) {
    try {
      check_image_id(bad);
      ADD_FAILURE() << "accepted an id of " << bad.size() << " bytes";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(RequestTranslation, QuotedClientTextIsCutWithAnEllipsis) {
  EXPECT_EQ(quote_client_text("cat.jpg"), "'cat.jpg'");
  const std::string longest(kMaxImageIdBytes, 'y');
  EXPECT_EQ(quote_client_text(longest), "'" + longest + "'");
  EXPECT_EQ(quote_client_text(std::string(10240, 'z')),
            "'" + std::string(kMaxImageIdBytes, 'z') + "…'");
  // Never half a UTF-8 character: "é" is two bytes and would straddle the cut.
  const std::string accented = std::string(kMaxImageIdBytes - 1, 'a') + "éé";
  EXPECT_EQ(quote_client_text(accented), "'" + std::string(kMaxImageIdBytes - 1, 'a') + "…'");
}

TEST(ResponseFields, ItemStatusCarriesCodeAndMessage) {
  v1::ItemStatus status;
  fill_status(grpc::Status(grpc::StatusCode::NOT_FOUND, "no image 'x'"), &status);
  EXPECT_EQ(status.code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_EQ(status.message(), "no image 'x'");
  fill_status(grpc::Status::OK, &status);
  EXPECT_EQ(status.code(), 0);
  EXPECT_EQ(status.message(), "");
}

}  // namespace
}  // namespace svdserve
