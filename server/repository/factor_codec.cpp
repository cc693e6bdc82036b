#include "server/repository/factor_codec.hpp"

#include <zlib.h>

#include <bit>
#include <cmath>
#include <cstring>

namespace svdserve {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the encoding is little-endian and written as the host lays it out");

constexpr char kMagic[4] = {'S', 'V', 'D', 'F'};
constexpr uint16_t kVersion = 1;
constexpr uint16_t kFloat32 = 1;
constexpr std::size_t kCrcOffset = 56;
// Larger sides than any image the server takes: sizes computed from them cannot overflow.
constexpr uint32_t kMaxSide = 1u << 20;
constexpr uint32_t kMaxChannels = 4;

struct Header {
  char magic[4];
  uint16_t version;
  uint16_t sample_type;
  uint32_t height, width, channels, rank_kept;
  double energy;
  int64_t written_unix_ms;
  uint32_t id_bytes;
  uint32_t reserved0;
  uint64_t payload_bytes;
  uint32_t crc;
  uint32_t reserved1;
};
static_assert(sizeof(Header) == kCodecHeaderBytes && offsetof(Header, crc) == kCrcOffset);

uint64_t payload_bytes_of(const ImageShape& shape, uint32_t rank) {
  return uint64_t{shape.channels} * rank * (uint64_t{shape.height} + shape.width + 1) *
         sizeof(float);
}

uint32_t crc_of(std::string_view header, std::string_view rest) {
  char zeroed[kCodecHeaderBytes];
  std::memcpy(zeroed, header.data(), kCodecHeaderBytes);
  std::memset(zeroed + kCrcOffset, 0, sizeof(uint32_t));
  uLong crc = crc32_z(0L, reinterpret_cast<const Bytef*>(zeroed), kCodecHeaderBytes);
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(rest.data()), rest.size());
  return static_cast<uint32_t>(crc);
}

Header read_header(std::string_view bytes) {
  if (bytes.size() < kCodecHeaderBytes) throw CorruptEntry("factor entry shorter than its header");
  Header header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0) {
    throw CorruptEntry("not a factor entry (wrong magic)");
  }
  if (header.version != kVersion) {
    throw CorruptEntry("factor entry of version " + std::to_string(header.version) +
                       "; this server reads version " + std::to_string(kVersion));
  }
  const ImageShape shape{header.width, header.height, header.channels};
  if (header.sample_type != kFloat32 || header.height == 0 || header.width == 0 ||
      header.height > kMaxSide || header.width > kMaxSide || header.channels == 0 ||
      header.channels > kMaxChannels || header.rank_kept == 0 ||
      header.rank_kept > shape.full_rank() || header.id_bytes == 0 ||
      header.id_bytes > kMaxStoredIdBytes ||
      header.payload_bytes != payload_bytes_of(shape, header.rank_kept) ||
      !std::isfinite(header.energy) || header.energy < 0.0) {
    throw CorruptEntry("factor entry header is inconsistent");
  }
  return header;
}

}  // namespace

std::string encode_factors(std::string_view id, const HostFactors& factors,
                           int64_t written_unix_ms) {
  const ImageShape& shape = factors.shape;
  const uint32_t rank = factors.rank_kept;
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.version = kVersion;
  header.sample_type = kFloat32;
  header.height = shape.height;
  header.width = shape.width;
  header.channels = shape.channels;
  header.rank_kept = rank;
  header.energy = factors.energy;
  header.written_unix_ms = written_unix_ms;
  header.id_bytes = static_cast<uint32_t>(id.size());
  header.payload_bytes = payload_bytes_of(shape, rank);

  std::string out(kCodecHeaderBytes + id.size() + header.payload_bytes, '\0');
  char* at = out.data() + kCodecHeaderBytes;
  std::memcpy(at, id.data(), id.size());
  at += id.size();
  const auto append = [&](const std::vector<float>& values, std::size_t count) {
    if (values.size() != count) throw InternalError("factors of the wrong size to encode");
    std::memcpy(at, values.data(), count * sizeof(float));
    at += count * sizeof(float);
  };
  for (uint32_t c = 0; c < shape.channels; ++c) {
    append(factors.u.at(c), std::size_t{shape.height} * rank);
    append(factors.singular_values.at(c), rank);
    append(factors.vt.at(c), std::size_t{rank} * shape.width);
  }
  std::memcpy(out.data(), &header, sizeof(header));
  header.crc = crc_of(std::string_view(out).substr(0, kCodecHeaderBytes),
                      std::string_view(out).substr(kCodecHeaderBytes));
  std::memcpy(out.data(), &header, sizeof(header));
  return out;
}

EntryHead decode_head(std::string_view prefix) {
  const Header header = read_header(prefix);
  if (prefix.size() < kCodecHeaderBytes + header.id_bytes) {
    throw CorruptEntry("factor entry shorter than its id");
  }
  return EntryHead{
      .id = std::string(prefix.substr(kCodecHeaderBytes, header.id_bytes)),
      .shape = ImageShape{header.width, header.height, header.channels},
      .rank_kept = header.rank_kept,
      .written_unix_ms = header.written_unix_ms,
      .total_bytes = kCodecHeaderBytes + header.id_bytes + header.payload_bytes};
}

DecodedEntry decode_factors(std::string_view encoded) {
  const Header header = read_header(encoded);
  DecodedEntry entry{.head = decode_head(encoded), .factors = {}};
  if (encoded.size() != entry.head.total_bytes) {
    throw CorruptEntry("factor entry is " + std::to_string(encoded.size()) + " bytes, its header "
                       "says " + std::to_string(entry.head.total_bytes) + " (truncated or torn)");
  }
  if (crc_of(encoded.substr(0, kCodecHeaderBytes), encoded.substr(kCodecHeaderBytes)) !=
      header.crc) {
    throw CorruptEntry("factor entry fails its checksum");
  }
  const ImageShape& shape = entry.head.shape;
  const uint32_t rank = header.rank_kept;
  HostFactors& factors = entry.factors;
  factors.shape = shape;
  factors.rank_kept = rank;
  factors.energy = header.energy;
  const char* at = encoded.data() + kCodecHeaderBytes + header.id_bytes;
  const auto take = [&](std::size_t count) {
    std::vector<float> values(count);
    std::memcpy(values.data(), at, count * sizeof(float));
    at += count * sizeof(float);
    return values;
  };
  for (uint32_t c = 0; c < shape.channels; ++c) {
    factors.u.push_back(take(std::size_t{shape.height} * rank));
    factors.singular_values.push_back(take(rank));
    factors.vt.push_back(take(std::size_t{rank} * shape.width));
  }
  return entry;
}

}  // namespace svdserve
