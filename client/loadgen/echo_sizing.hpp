#pragma once
// Echo requests that cost the transport what a real call costs: the same serialized request and
// response sizes, so bench can set a real RPC against the transport's limit for its sizes.

#include <cstddef>
#include <string_view>

#include "svdserve/v1/svdserve.pb.h"

namespace svdserve::loadgen {

// The largest payload whose bytes field (tag, length, bytes) fits in field_bytes; 0 when none.
[[nodiscard]] std::size_t bytes_field_payload_for(std::size_t field_bytes) noexcept;

// An EchoRequest whose serialized size is request_bytes and whose answer's serialized size is
// response_bytes, each as close as protobuf's varint lengths allow and never above (when
// request_bytes is smaller than the request's own fields, the payload is empty and it is a few
// bytes above). The payload is the start of real_request, the bytes of the call being imitated,
// repeated as needed.
[[nodiscard]] v1::EchoRequest echo_request_matching(std::string_view real_request, std::size_t request_bytes,
                                                    std::size_t response_bytes);

// The serialized size of the server's answer to request.
[[nodiscard]] std::size_t echo_response_wire_bytes(const v1::EchoRequest& request) noexcept;

}  // namespace svdserve::loadgen
