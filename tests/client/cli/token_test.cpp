// svdserve-cli token: hashes and new tokens, without a server.

#include <gtest/gtest.h>

#include <sstream>

#include "client/bearer_token.hpp"
#include "run_cli.hpp"

namespace svdserve::testing {
namespace {

CliOutcome run_with_input(const std::vector<std::string>& args, const std::string& input) {
  std::istringstream in(input);
  std::ostringstream out;
  std::ostringstream err;
  const int code = cli::run_cli(
      args, cli::CliEnvironment{.out = out, .err = err, .err_is_tty = false, .in = &in});
  return CliOutcome{code, out.str(), err.str()};
}

TEST(CliToken, HashReadsTheTokenFromStandardInput) {
  const CliOutcome hashed = run_with_input({"token", "hash"}, "abc\n");
  EXPECT_EQ(hashed.code, 0) << hashed.err;
  EXPECT_EQ(hashed.out,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n");
  // What `printf %s "$TOKEN"` gives (no newline) hashes the same.
  EXPECT_EQ(run_with_input({"token", "hash"}, "abc").out, hashed.out);

  const CliOutcome empty = run_with_input({"token", "hash"}, "");
  EXPECT_EQ(empty.code, 2);
  EXPECT_TRUE(contains(empty.err, "standard input")) << empty.err;
}

TEST(CliToken, NewPrintsATokenThenItsTokenFileLine) {
  const CliOutcome made = run_with_input({"token", "new", "write", "ci", "tenant-a/"}, "");
  ASSERT_EQ(made.code, 0) << made.err;
  std::istringstream lines(made.out);
  std::string token;
  std::string line;
  ASSERT_TRUE(std::getline(lines, token));
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ(line, token_hash_field(token) + " write ci tenant-a/");
  EXPECT_NE(run_with_input({"token", "new", "read", "ci"}, "").out, made.out);

  const CliOutcome json = run_with_input({"--json", "token", "new", "admin", "ops"}, "");
  EXPECT_EQ(json.code, 0) << json.err;
  EXPECT_TRUE(contains(json.out, "\"token\"")) << json.out;
  EXPECT_TRUE(contains(json.out, " admin ops\"")) << json.out;
}

TEST(CliToken, NewRefusesWhatTheTokenFileWouldRefuse) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"token", "new", "root", "ci"},
        std::vector<std::string>{"token", "new", "read"},
        std::vector<std::string>{"token", "new", "read", "c i"},
        std::vector<std::string>{"token", "new", "read", "ci", "tenant a"},
        std::vector<std::string>{"token", "make"}}) {
    const CliOutcome refused = run_with_input(args, "");
    EXPECT_EQ(refused.code, 2) << args.back() << ": " << refused.err;
    EXPECT_TRUE(refused.out.empty()) << refused.out;
  }
}

}  // namespace
}  // namespace svdserve::testing
