#pragma once
// How one image's factors are kept in a repository, the same bytes in a file and in a Redis
// value. Version 1, little-endian:
//
//   offset  bytes  field
//        0      4  magic "SVDF"
//        4      2  version (1)
//        6      2  sample type (1: float32)
//        8     16  height, width, channels, rank_kept (uint32 each)
//       24      8  energy: ||A||_F^2 over all channels (float64)
//       32      8  written_unix_ms (int64)
//       40      4  id bytes (uint32), then 4 reserved (zero)
//       48      8  payload bytes (uint64)
//       56      4  CRC-32 (zlib's) of the header with this field zero, the id and the payload
//       60      4  reserved (zero)
//       64         the id, then for each channel U (height x rank), S (rank), Vt (rank x width),
//                  float32, row-major
//
// A reader checks the sizes against the shape and the checksum against every byte, so a torn,
// truncated or corrupted entry is refused (CorruptEntry), never loaded.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/errors.hpp"
#include "kernels/host_factors.hpp"

namespace svdserve {

inline constexpr std::size_t kCodecHeaderBytes = 64;
// Ids are at most this long (a namespace and a client's id of at most 256 bytes fit).
inline constexpr std::size_t kMaxStoredIdBytes = 1024;
// What a scan reads of each entry to index it: the header and the longest id.
inline constexpr std::size_t kIndexPrefixBytes = kCodecHeaderBytes + kMaxStoredIdBytes;

// An entry that is not a whole, intact encoding: reported and skipped, never served.
class CorruptEntry : public InternalError {
 public:
  using InternalError::InternalError;
};

// What the header says, without the payload: enough to list an image and to check its size.
struct EntryHead {
  std::string id;
  ImageShape shape;
  uint32_t rank_kept = 0;
  int64_t written_unix_ms = 0;
  uint64_t total_bytes = 0;  // header, id and payload
};

struct DecodedEntry {
  EntryHead head;
  HostFactors factors;
};

[[nodiscard]] std::string encode_factors(std::string_view id, const HostFactors& factors,
                                         int64_t written_unix_ms);

// The header and id at the start of `prefix` (at least the header and the id). Throws
// CorruptEntry when they are not a version-1 header or the sizes do not agree with the shape.
[[nodiscard]] EntryHead decode_head(std::string_view prefix);

// A whole entry; throws CorruptEntry unless every byte is there and the checksum agrees.
[[nodiscard]] DecodedEntry decode_factors(std::string_view encoded);

}  // namespace svdserve
