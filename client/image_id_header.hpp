#pragma once
// The routing header: every call keyed by an image id carries the id in `x-svdserve-image-id`,
// so a proxy (nginx `hash`, Envoy `RING_HASH`) can send it to the replica that probably holds
// the image without parsing the protobuf body.
//
// gRPC metadata values (non-binary headers) must be printable ASCII. Ids are not always (UTF-8
// file names), so the value is the id percent-encoded: every byte outside '!'..'~', and '%'
// itself, becomes %XX (upper-case hex). Printable ids, the usual case, travel unchanged, and
// each id has exactly one encoding, so every client routes it the same way.

#include <string>
#include <string_view>

namespace svdserve {

inline constexpr std::string_view kImageIdHeader = "x-svdserve-image-id";

// The header's value for `id`: the id percent-encoded as above; empty for an empty id (no
// header is sent then).
[[nodiscard]] std::string image_id_header_value(std::string_view id);

}  // namespace svdserve
