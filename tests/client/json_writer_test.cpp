#include "client/json_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace svdserve {
namespace {

TEST(JsonEscape, QuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_escape("plain"), "plain");
  EXPECT_EQ(json_escape("a\"b"), "a\\\"b");
  EXPECT_EQ(json_escape("a\\b"), "a\\\\b");
  EXPECT_EQ(json_escape("line\nnext\r\ttab"), "line\\nnext\\r\\ttab");
  EXPECT_EQ(json_escape("\b\f"), "\\b\\f");
  EXPECT_EQ(json_escape(std::string("\x01\x1f", 2)), "\\u0001\\u001f");
  EXPECT_EQ(json_escape(std::string("nul\0x", 5)), "nul\\u0000x");
  EXPECT_EQ(json_escape("/"), "/");
}

TEST(JsonEscape, Utf8PassesThrough) {
  EXPECT_EQ(json_escape("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");
  EXPECT_EQ(json_escape("\x7f"), "\x7f");
}

TEST(JsonWriter, CompactDocument) {
  JsonWriter json(0);
  json.begin_object()
      .field("name", "a \"b\"")
      .field("count", 3)
      .field("big", std::uint64_t{18446744073709551615u})
      .field("negative", std::int64_t{-5})
      .field("ok", true)
      .field("ratio", 0.25);
  json.key("list").begin_array().value(1).value("x").null().begin_object().end_object().end_array();
  json.key("empty").begin_array().end_array();
  json.end_object();
  EXPECT_EQ(json.str(),
            "{\"name\":\"a \\\"b\\\"\",\"count\":3,\"big\":18446744073709551615,\"negative\":-5,\"ok\":true,"
            "\"ratio\":0.25,\"list\":[1,\"x\",null,{}],\"empty\":[]}");
}

TEST(JsonWriter, IndentedDocument) {
  JsonWriter json(2);
  json.begin_object().field("a", 1);
  json.key("b").begin_array().value(2).value(3).end_array();
  json.end_object();
  EXPECT_EQ(json.str(), "{\n  \"a\": 1,\n  \"b\": [\n    2,\n    3\n  ]\n}");
}

TEST(JsonWriter, KeysAreEscaped) {
  JsonWriter json(0);
  json.begin_object().field("we\"ird\n", "v").end_object();
  EXPECT_EQ(json.str(), "{\"we\\\"ird\\n\":\"v\"}");
}

TEST(JsonWriter, NonFiniteNumbersAreNull) {
  JsonWriter json(0);
  json.begin_array()
      .value(std::numeric_limits<double>::quiet_NaN())
      .value(std::numeric_limits<double>::infinity())
      .value(1.5)
      .end_array();
  EXPECT_EQ(json.str(), "[null,null,1.5]");
}

TEST(JsonWriter, DoublesRoundTrip) {
  JsonWriter json(0);
  json.begin_array().value(0.1).value(1e-7).value(123456.789).end_array();
  EXPECT_EQ(json.str(), "[0.1,1e-07,123456.789]");
}

}  // namespace
}  // namespace svdserve
