#include "client/cli/args.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace svdserve::cli {
namespace {

const std::array<OptionSpec, 4> kSpecs = {{
    {"rank", "K", "rank"},
    {"output", "OUT", "output", 'o'},
    {"recursive", "", "recurse", 'r'},
    {"json", "", "json"},
}};

ParsedArgs parse(std::vector<std::string> args, StopAt stop = StopAt::end) {
  return parse_args(args, kSpecs, stop);
}

TEST(ParseArgs, LongOptionsWithSeparateAndInlineValues) {
  const auto args = parse({"--rank", "8", "--output=out.png"});
  EXPECT_EQ(args.value("rank"), "8");
  EXPECT_EQ(args.value("output"), "out.png");
  EXPECT_FALSE(args.has("json"));
  EXPECT_TRUE(args.positionals().empty());
}

TEST(ParseArgs, ShortAliasesAndFlags) {
  const auto args = parse({"-o", "x.png", "-r", "--json"});
  EXPECT_EQ(args.value("output"), "x.png");
  EXPECT_TRUE(args.has("recursive"));
  EXPECT_TRUE(args.has("json"));
}

TEST(ParseArgs, PositionalsAnywhereAndAfterDoubleDash) {
  const auto args = parse({"a.png", "--rank", "4", "b.png", "--", "--json", "-o"});
  EXPECT_EQ(args.positionals(), (std::vector<std::string>{"a.png", "b.png", "--json", "-o"}));
  EXPECT_FALSE(args.has("json"));
}

TEST(ParseArgs, ValueMayStartWithDash) {
  const auto args = parse({"--output", "-"});
  EXPECT_EQ(args.value("output"), "-");
}

TEST(ParseArgs, LoneDashIsPositional) {
  const auto args = parse({"-"});
  EXPECT_EQ(args.positionals(), std::vector<std::string>{"-"});
}

TEST(ParseArgs, LastOccurrenceWins) {
  const auto args = parse({"--rank", "4", "--rank=9"});
  EXPECT_EQ(args.value("rank"), "9");
}

TEST(ParseArgs, StopAtFirstPositionalLeavesTheRest) {
  const auto args = parse({"--json", "decompose", "--rank", "4", "--unknown"}, StopAt::first_positional);
  EXPECT_TRUE(args.has("json"));
  EXPECT_FALSE(args.has("rank"));
  EXPECT_EQ(args.positionals(), (std::vector<std::string>{"decompose", "--rank", "4", "--unknown"}));
}

TEST(ParseArgs, Errors) {
  EXPECT_THROW(parse({"--nope"}), UsageError);
  EXPECT_THROW(parse({"-x"}), UsageError);
  EXPECT_THROW(parse({"-or"}), UsageError);  // No bundling.
  EXPECT_THROW(parse({"--rank"}), UsageError);
  EXPECT_THROW(parse({"--json=1"}), UsageError);
}

TEST(ParseArgs, ErrorNamesTheOption) {
  try {
    static_cast<void>(parse({"--bogus"}));
    FAIL() << "no UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("--bogus"), std::string::npos);
  }
}

TEST(ParseNumbers, Unsigned) {
  EXPECT_EQ(parse_uint32("16", "--rank"), 16u);
  EXPECT_EQ(parse_uint32("0", "--rank"), 0u);
  EXPECT_EQ(parse_uint64("18446744073709551615", "--count"), UINT64_MAX);
  for (const char* bad : {"", "-1", "+1", "1.5", "12a", "4294967296", " 1"}) {
    EXPECT_THROW(static_cast<void>(parse_uint32(bad, "--rank")), UsageError) << bad;
  }
}

TEST(ParseNumbers, Double) {
  EXPECT_DOUBLE_EQ(parse_double("0.9", "--energy"), 0.9);
  EXPECT_DOUBLE_EQ(parse_double("1e-3", "--energy"), 1e-3);
  for (const char* bad : {"", "abc", "0.9x", "nan", "inf"}) {
    EXPECT_THROW(static_cast<void>(parse_double(bad, "--energy")), UsageError) << bad;
  }
}

TEST(ParseNumbers, RankList) {
  EXPECT_EQ(parse_rank_list("8", "--rank"), std::vector<std::uint32_t>{8});
  EXPECT_EQ(parse_rank_list("4,8,16", "--rank"), (std::vector<std::uint32_t>{4, 8, 16}));
  for (const char* bad : {"", ",", "4,", ",4", "4,,8", "0", "4,x"}) {
    EXPECT_THROW(static_cast<void>(parse_rank_list(bad, "--rank")), UsageError) << bad;
  }
}

TEST(ParseNumbers, Seconds) {
  EXPECT_EQ(parse_seconds("60", "--timeout"), std::chrono::seconds(60));
  EXPECT_EQ(parse_seconds("1.5", "--timeout"), std::chrono::milliseconds(1500));
  EXPECT_EQ(parse_seconds("0", "--timeout"), std::chrono::milliseconds(0));
  EXPECT_THROW(static_cast<void>(parse_seconds("-1", "--timeout")), UsageError);
  EXPECT_THROW(static_cast<void>(parse_seconds("1e12", "--timeout")), UsageError);
}

}  // namespace
}  // namespace svdserve::cli
