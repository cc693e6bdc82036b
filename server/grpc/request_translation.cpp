#include "server/grpc/request_translation.hpp"

#include <grpcpp/support/proto_buffer_reader.h>

#include <string>

#include "kernels/errors.hpp"
#include "server/grpc/status_mapping.hpp"

namespace svdserve {
namespace {

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

std::optional<SampleType> sample_type_of(v1::PixelType type) {
  switch (type) {
    case v1::PIXEL_TYPE_U8: return SampleType::u8;
    case v1::PIXEL_TYPE_U16: return SampleType::u16;
    case v1::PIXEL_TYPE_F32: return SampleType::f32;
    default: return std::nullopt;
  }
}

}  // namespace

void check_image_id(std::string_view id) {
  if (id.size() > kMaxImageIdBytes) {
    throw InvalidArgument("image id is longer than " + std::to_string(kMaxImageIdBytes) +
                          " bytes");
  }
  for (const unsigned char c : id) {
    if (c < 0x20 || c == 0x7f) throw InvalidArgument("image id contains control characters");
  }
}

std::string quote_client_text(std::string_view text) {
  std::string quote(1, '\'');
  quote += shortened(text, kMaxImageIdBytes);
  quote += '\'';
  return quote;
}

ImageSource image_source_of(const v1::ImageInput& input) {
  switch (input.source_case()) {
    case v1::ImageInput::kEncoded:
      return EncodedImage{bytes_of(input.encoded())};
    case v1::ImageInput::kRaw: {
      const v1::RawImage& raw = input.raw();
      return RawPixels{raw.width(), raw.height(), raw.channels(), sample_type_of(raw.type()),
                       bytes_of(raw.data())};
    }
    case v1::ImageInput::SOURCE_NOT_SET:
      break;
  }
  return std::monostate{};
}

OutputFormat output_format_of(v1::OutputFormat format) {
  switch (format) {
    case v1::OUTPUT_FORMAT_UNSPECIFIED:
    case v1::OUTPUT_FORMAT_RAW_U8: return OutputFormat::raw_u8;
    case v1::OUTPUT_FORMAT_PNG: return OutputFormat::png;
    case v1::OUTPUT_FORMAT_RAW_F32: return OutputFormat::raw_f32;
    case v1::OUTPUT_FORMAT_JPEG: return OutputFormat::jpeg;
    default: throw InvalidArgument("unknown output format " + std::to_string(format));
  }
}

v1::OutputFormat to_proto(OutputFormat format) noexcept {
  switch (format) {
    case OutputFormat::raw_u8: return v1::OUTPUT_FORMAT_RAW_U8;
    case OutputFormat::png: return v1::OUTPUT_FORMAT_PNG;
    case OutputFormat::raw_f32: return v1::OUTPUT_FORMAT_RAW_F32;
    case OutputFormat::jpeg: return v1::OUTPUT_FORMAT_JPEG;
  }
  return v1::OUTPUT_FORMAT_RAW_U8;
}

uint32_t jpeg_quality_of(uint32_t requested) {
  if (requested == 0) return kDefaultJpegQuality;
  if (requested > kMaxJpegQuality) {
    throw InvalidArgument("jpeg_quality is " + std::to_string(requested) +
                          "; use 1..100 (higher: larger and closer to the reconstruction), or 0 "
                          "for the default " + std::to_string(kDefaultJpegQuality));
  }
  return requested;
}

Clock::time_point to_steady_deadline(std::chrono::system_clock::time_point deadline) {
  const auto now_system = std::chrono::system_clock::now();
  if (deadline >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return Clock::time_point::max();
  }
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(deadline - now_system);
}

void parse_request(const grpc::ByteBuffer& bytes, google::protobuf::MessageLite& request) {
  if (!bytes.Valid()) return;     // no bytes: the empty message
  grpc::ByteBuffer shared(bytes);  // references the same slices; the reader wants it mutable
  grpc::ProtoBufferReader reader(&shared);
  if (!reader.status().ok() || !request.ParseFromZeroCopyStream(&reader)) {
    throw InvalidArgument("the request is not a valid " + request.GetTypeName() +
                          " (malformed protobuf bytes)");
  }
}

v1::ReconstructRequest parse_reconstruct_request(const grpc::ByteBuffer& bytes) {
  v1::ReconstructRequest request;
  parse_request(bytes, request);
  return request;
}

}  // namespace svdserve
