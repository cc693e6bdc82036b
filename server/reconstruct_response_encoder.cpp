#include "server/reconstruct_response_encoder.hpp"

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

}  // namespace

grpc::ByteBuffer encode_reconstruct_response(const v1::ReconstructResponse& fields,
                                             PixelBytes pixels) {
  if (!fields.pixels().empty()) {
    throw InternalError("encode_reconstruct_response: the pixels must come separately");
  }
  std::string head = fields.SerializeAsString();
  if (pixels.size() == 0) {  // proto3 leaves an empty bytes field out
    const grpc::Slice head_slice(head);
    return grpc::ByteBuffer(&head_slice, 1);
  }
  append_varint(head, (uint64_t{v1::ReconstructResponse::kPixelsFieldNumber} << 3) | kLengthDelimited);
  append_varint(head, pixels.size());

  auto owner = std::make_unique<PixelBytes>(std::move(pixels));
  std::byte* const data = owner->data();
  const std::size_t size = owner->size();
  const std::array<grpc::Slice, 2> slices{
      grpc::Slice(head),
      grpc::Slice(data, size, &release_pixels, owner.release())};  // the slice owns it now
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace svdserve
