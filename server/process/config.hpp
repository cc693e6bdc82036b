#pragma once
// Server configuration: the ServerConfig proto message, read from a text file, with defaults
// filled in for fields left at zero and every value checked before the server starts.

#include <string>
#include <thread>

#include "svdserve/v1/config.pb.h"

namespace svdserve {

// Reads a protobuf text-format file. Throws InvalidArgument naming the file and the line and
// column of the first error, never the file's text.
[[nodiscard]] v1::ServerConfig read_config_file(const std::string& path);

// Fills every field left at 0/empty with its documented default (config/svdserve.textproto).
void apply_defaults(v1::ServerConfig& config);

// Throws InvalidArgument listing every invalid field, e.g. "max_batch_size must be 1..4096".
void validate(const v1::ServerConfig& config);

}  // namespace svdserve
