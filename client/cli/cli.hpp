#pragma once
// The whole command line of svdserve-cli: global options, the subcommand, its options, help.

#include <istream>
#include <optional>
#include <ostream>
#include <span>
#include <string>

#include "client/cli/command.hpp"

namespace svdserve::cli {

struct CliEnvironment {
  std::ostream& out;
  std::ostream& err;
  bool err_is_tty = false;
  std::optional<std::string> server_from_env{};  // SVDSERVE_SERVER
  std::optional<std::string> token_from_env{};   // SVDSERVE_TOKEN
  std::istream* in = nullptr;                    // standard input (token hash reads it)
};

// args: argv without the program name. Returns the process exit code (see ExitCode).
[[nodiscard]] int run_cli(std::span<const std::string> args, const CliEnvironment& environment);

[[nodiscard]] std::string usage_text();
[[nodiscard]] std::string command_help(const Command& command);
[[nodiscard]] const std::vector<Command>& all_commands();

}  // namespace svdserve::cli
