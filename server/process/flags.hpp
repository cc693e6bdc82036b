#pragma once
// svdserve's command line: a config file plus overrides of the fields people change most.

#include <optional>
#include <string>
#include <vector>

#include "svdserve/v1/config.pb.h"

namespace svdserve {

struct CommandLine {
  std::string config_path;  // empty: built-in defaults
  std::string load_dir;     // decompose this folder at start (absolute; a load root)
  bool help = false;
  bool version = false;
  std::vector<std::pair<std::string, std::string>> overrides;  // flag name -> value
};

// Throws InvalidArgument on an unknown flag or a missing value.
[[nodiscard]] CommandLine parse_command_line(int argc, char** argv);

// Applies the overrides to config, and makes load_dir a load root. Throws InvalidArgument on a
// bad value.
void apply_overrides(const CommandLine& command_line, v1::ServerConfig& config);

[[nodiscard]] std::string usage();

}  // namespace svdserve
