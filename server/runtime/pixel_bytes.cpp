#include "server/runtime/pixel_bytes.hpp"

namespace svdserve {

const std::byte* PixelBytes::data() const noexcept {
  if (const auto* text = std::get_if<std::string>(&storage_)) {
    return reinterpret_cast<const std::byte*>(text->data());
  }
  return std::get<HostBuffer>(storage_).data();
}

std::size_t PixelBytes::size() const noexcept {
  if (const auto* text = std::get_if<std::string>(&storage_)) return text->size();
  return std::get<HostBuffer>(storage_).size();
}

std::string PixelBytes::take_string() {
  std::string result;
  if (auto* text = std::get_if<std::string>(&storage_)) {
    result = std::move(*text);
  } else {
    const auto* first = reinterpret_cast<const char*>(data());
    result.assign(first, first + size());
  }
  storage_ = std::string();
  return result;
}

}  // namespace svdserve
