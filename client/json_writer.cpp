#include "client/json_writer.hpp"

#include <array>
#include <cassert>
#include <charconv>
#include <cmath>

namespace svdserve {

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          constexpr std::string_view kHex = "0123456789abcdef";
          const auto byte = static_cast<unsigned char>(c);
          out += "\\u00";
          out += kHex[byte >> 4];
          out += kHex[byte & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out;
}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_ += '\n';
  out_.append(levels_.size() * static_cast<std::size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (levels_.empty()) return;
  Level& level = levels_.back();
  if (level.is_object) {
    assert(level.after_key && "JsonWriter: a value in an object needs a key");
    level.after_key = false;
    return;
  }
  if (!level.empty) out_ += ',';
  level.empty = false;
  newline();
}

JsonWriter& JsonWriter::key(std::string_view name) {
  assert(!levels_.empty() && levels_.back().is_object && !levels_.back().after_key);
  Level& level = levels_.back();
  if (!level.empty) out_ += ',';
  level.empty = false;
  level.after_key = true;
  newline();
  out_ += '"';
  out_ += json_escape(name);
  out_ += indent_ > 0 ? "\": " : "\":";
  return *this;
}

void JsonWriter::open(char bracket) {
  before_value();
  out_ += bracket;
  levels_.push_back(Level{.is_object = bracket == '{'});
}

void JsonWriter::close(char bracket) {
  assert(!levels_.empty() && levels_.back().is_object == (bracket == '}'));
  const bool was_empty = levels_.back().empty;
  levels_.pop_back();
  if (!was_empty) newline();
  out_ += bracket;
}

JsonWriter& JsonWriter::begin_object() {
  open('{');
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  close('}');
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  open('[');
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  close(']');
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  out_ += '"';
  out_ += json_escape(s);
  out_ += '"';
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t n) {
  before_value();
  out_ += std::to_string(n);
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t n) {
  before_value();
  out_ += std::to_string(n);
  return *this;
}

JsonWriter& JsonWriter::value(double x) {
  if (!std::isfinite(x)) return null();
  before_value();
  std::array<char, 32> buffer{};
  const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), x);
  assert(error == std::errc{});
  static_cast<void>(error);
  out_.append(buffer.data(), end);
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace svdserve
