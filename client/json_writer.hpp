#pragma once
// Writes JSON text by hand: objects, arrays, strings (escaped), numbers, booleans, null. Commas
// and indentation are the writer's job; nesting mistakes are the caller's (checked by assert).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace svdserve {

// s with quotes, backslashes and control characters escaped (RFC 8259), without the quotes
// around it. Bytes >= 0x80 pass through: the input is taken to be UTF-8.
[[nodiscard]] std::string json_escape(std::string_view s);

class JsonWriter {
 public:
  // indent 0: everything on one line.
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);  // Inside an object, before each value.

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(std::int64_t n);
  JsonWriter& value(std::uint64_t n);
  JsonWriter& value(int n) { return value(static_cast<std::int64_t>(n)); }
  JsonWriter& value(unsigned n) { return value(static_cast<std::uint64_t>(n)); }
  JsonWriter& value(double x);  // NaN and infinities become null: JSON has no such numbers.
  JsonWriter& null();

  template <class T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

  // The text so far; complete once every object and array is closed.
  [[nodiscard]] const std::string& str() const noexcept { return out_; }

 private:
  void before_value();
  void open(char bracket);
  void close(char bracket);
  void newline();

  struct Level {
    bool is_object = false;
    bool empty = true;
    bool after_key = false;
  };

  int indent_;
  std::string out_;
  std::vector<Level> levels_;
};

}  // namespace svdserve
