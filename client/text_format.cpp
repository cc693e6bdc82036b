#include "client/text_format.hpp"

#include <array>
#include <cstdio>
#include <string_view>

namespace svdserve {

std::string shape_text(const v1::Shape& shape) {
  return std::to_string(shape.width()) + "x" + std::to_string(shape.height()) + "x" +
         std::to_string(shape.channels());
}

std::string bytes_text(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  constexpr double kStep = 1024.0;
  if (static_cast<double>(bytes) < kStep) return std::to_string(bytes) + " B";
  auto value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= kStep && unit + 1 < kUnits.size()) {
    value /= kStep;
    ++unit;
  }
  return fixed_text(value, 1) + " " + std::string(kUnits[unit]);
}

std::string ms_text(double microseconds) { return fixed_text(microseconds / 1000.0, 2); }

std::string fixed_text(double value, int decimals) {
  std::array<char, 64> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.*f", decimals, value);
  return buffer.data();
}

}  // namespace svdserve
