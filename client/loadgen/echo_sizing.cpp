#include "client/loadgen/echo_sizing.hpp"

#include <google/protobuf/io/coded_stream.h>

namespace svdserve::loadgen {
namespace {

constexpr std::size_t kFieldTagBytes = 1;  // Field numbers 1 and 2 of a message: a 1-byte tag.

std::size_t varint_bytes(std::size_t value) noexcept {
  return google::protobuf::io::CodedOutputStream::VarintSize64(static_cast<std::uint64_t>(value));
}

}  // namespace

std::size_t bytes_field_payload_for(std::size_t field_bytes) noexcept {
  if (field_bytes <= kFieldTagBytes) return 0;
  // The length prefix takes at least one byte; a longer prefix can only shrink the payload, so
  // start from the most and step down until tag + prefix + payload fits (at most a few steps).
  std::size_t payload = field_bytes - kFieldTagBytes - 1;
  while (payload > 0 && kFieldTagBytes + varint_bytes(payload) + payload > field_bytes) --payload;
  return payload;
}

v1::EchoRequest echo_request_matching(std::string_view real_request, std::size_t request_bytes,
                                      std::size_t response_bytes) {
  v1::EchoRequest request;
  const std::size_t response_payload = bytes_field_payload_for(response_bytes);
  request.set_response_bytes(response_payload);
  const std::size_t response_field = response_payload == 0 ? 0 : kFieldTagBytes + varint_bytes(response_payload);
  const std::size_t room = request_bytes > response_field ? request_bytes - response_field : 0;
  const std::size_t payload_size = bytes_field_payload_for(room);
  std::string payload;
  payload.reserve(payload_size);
  while (!real_request.empty() && payload.size() < payload_size) {
    payload.append(real_request.substr(0, payload_size - payload.size()));
  }
  payload.resize(payload_size, '\0');
  request.set_payload(std::move(payload));
  return request;
}

std::size_t echo_response_wire_bytes(const v1::EchoRequest& request) noexcept {
  const auto payload = static_cast<std::size_t>(request.response_bytes());
  return payload == 0 ? 0 : kFieldTagBytes + varint_bytes(payload) + payload;
}

}  // namespace svdserve::loadgen
