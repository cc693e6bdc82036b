#pragma once
// The routing header: every call keyed by an image id carries the id in `x-svdserve-image-id`,
// so a proxy (nginx `hash`, Envoy `RING_HASH`) can send it to the replica that probably holds
// the image without parsing the protobuf body.
//
// gRPC metadata values (non-binary headers) must be printable ASCII. Ids are not always (UTF-8
// file names), so the value is the id percent-encoded: every byte outside '!'..'~', and '%'
// itself, becomes %XX (upper-case hex). Printable ids, the usual case, travel unchanged, and
// each id has exactly one encoding, so every client routes it the same way.
//
// Ids longer than the server accepts travel without the header: the server refuses them with
// INVALID_ARGUMENT wherever they land, while a header of several KiB would be refused by gRPC's
// metadata limit (RESOURCE_EXHAUSTED) before the server could say why.

#include <cstddef>
#include <string>
#include <string_view>

namespace svdserve {

inline constexpr std::string_view kImageIdHeader = "x-svdserve-image-id";
// The server's limit on an id (server/grpc/request_translation.hpp, kMaxImageIdBytes).
inline constexpr std::size_t kMaxRoutedIdBytes = 256;

// The header's value for `id`: the id percent-encoded as above; empty (no header is sent) for
// an empty id or one longer than kMaxRoutedIdBytes.
[[nodiscard]] std::string image_id_header_value(std::string_view id);

}  // namespace svdserve
