#include "client/image_id_header.hpp"

namespace svdserve {
namespace {

[[nodiscard]] bool travels_unchanged(unsigned char byte) noexcept {
  return byte >= '!' && byte <= '~' && byte != '%';
}

}  // namespace

std::string image_id_header_value(std::string_view id) {
  constexpr std::string_view kHexDigits = "0123456789ABCDEF";
  constexpr unsigned kNibbleBits = 4;
  constexpr unsigned kNibbleMask = 0xF;
  std::string value;
  if (id.size() > kMaxRoutedIdBytes) return value;
  value.reserve(id.size());
  for (const char c : id) {
    const auto byte = static_cast<unsigned char>(c);
    if (travels_unchanged(byte)) {
      value.push_back(c);
    } else {
      value.push_back('%');
      value.push_back(kHexDigits[byte >> kNibbleBits]);
      value.push_back(kHexDigits[byte & kNibbleMask]);
    }
  }
  return value;
}

}  // namespace svdserve
