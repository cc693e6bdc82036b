#pragma once
// Runs svdserve-cli in-process and keeps what it printed, for the command-line tests.

#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "client/cli/cli.hpp"

namespace svdserve::testing {

struct CliOutcome {
  int code = -1;
  std::string out;
  std::string err;
};

[[nodiscard]] inline CliOutcome run_cli(const std::vector<std::string>& args,
                                        std::optional<std::string> server_from_env = std::nullopt) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = cli::run_cli(args, cli::CliEnvironment{.out = out, .err = err, .err_is_tty = false,
                                                          .server_from_env = std::move(server_from_env)});
  return CliOutcome{code, out.str(), err.str()};
}

[[nodiscard]] inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace svdserve::testing
