// svdserve-cli: the command-line client of svdserve. This file only wires the process (argv,
// environment, terminals) to svdserve::cli::run_cli; the commands live in client/cli/commands/.
// Exit codes: svdserve::ExitCode (client/status_text.hpp), listed by --help.

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "client/cli/cli.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const char* server = std::getenv("SVDSERVE_SERVER");
  const char* token = std::getenv("SVDSERVE_TOKEN");
  const svdserve::cli::CliEnvironment environment{
      .out = std::cout,
      .err = std::cerr,
      .err_is_tty = isatty(STDERR_FILENO) == 1,
      .server_from_env = server != nullptr ? std::optional<std::string>(server) : std::nullopt,
      .token_from_env = token != nullptr ? std::optional<std::string>(token) : std::nullopt,
      .in = &std::cin,
  };
  const int code = svdserve::cli::run_cli(args, environment);
  std::cout.flush();
  return code;
}
