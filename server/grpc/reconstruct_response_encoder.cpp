#include "server/grpc/reconstruct_response_encoder.hpp"

#include <grpcpp/support/slice.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

// Protobuf wire type 2: a varint length, then that many bytes.
constexpr uint32_t kLengthDelimited = 2;

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// Called by gRPC, on any thread, when the last reference to the pixel slice goes.
void release_pixels(void* owner) { delete static_cast<PixelBytes*>(owner); }

// The pixels field's tag and length; nothing for no pixels (proto3 leaves an empty bytes field
// out).
std::string pixels_field_head(std::size_t pixels) {
  std::string head;
  if (pixels > 0) {
    append_varint(head, (uint64_t{v1::ReconstructResponse::kPixelsFieldNumber} << 3) |
                            kLengthDelimited);
    append_varint(head, pixels);
  }
  return head;
}

// `prefix` (what goes before the response on the wire), `fields` serialised, the pixels field's
// head, then the pixels as a slice that owns them.
grpc::ByteBuffer encode_with_pixels(std::string prefix, const v1::ReconstructResponse& fields,
                                    PixelBytes pixels) {
  if (!fields.pixels().empty()) {
    throw InternalError("encode_reconstruct_response: the pixels must come separately");
  }
  std::string head = std::move(prefix);
  fields.AppendToString(&head);
  head += pixels_field_head(pixels.size());
  if (pixels.size() == 0) {
    const grpc::Slice head_slice(head);
    return grpc::ByteBuffer(&head_slice, 1);
  }
  auto owner = std::make_unique<PixelBytes>(std::move(pixels));
  std::byte* const data = owner->data();
  const std::size_t size = owner->size();
  const std::array<grpc::Slice, 2> slices{
      grpc::Slice(head),
      grpc::Slice(data, size, &release_pixels, owner.release())};  // the slice owns it now
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace

grpc::ByteBuffer encode_reconstruct_response(const v1::ReconstructResponse& fields,
                                             PixelBytes pixels) {
  return encode_with_pixels({}, fields, std::move(pixels));
}

grpc::ByteBuffer encode_reconstruct_stream_response(const v1::ReconstructResponse& fields,
                                                    PixelBytes pixels) {
  // status (an OK ItemStatus, present but empty, as the typed method wrote it), then the tag and
  // length of `result`; the result itself follows as encode_reconstruct_response writes it.
  v1::ReconstructStreamResponse outer;
  outer.mutable_status();
  std::string prefix = outer.SerializeAsString();
  append_varint(prefix, (uint64_t{v1::ReconstructStreamResponse::kResultFieldNumber} << 3) |
                            kLengthDelimited);
  append_varint(prefix, fields.ByteSizeLong() + pixels_field_head(pixels.size()).size() +
                            pixels.size());
  return encode_with_pixels(std::move(prefix), fields, std::move(pixels));
}

grpc::ByteBuffer encode_message(const google::protobuf::MessageLite& message) {
  const grpc::Slice slice(message.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace svdserve
