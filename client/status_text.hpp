#pragma once
// gRPC status codes as text, and the CLI's exit codes derived from them.

#include <string>
#include <string_view>

#include <grpcpp/support/status.h>

namespace svdserve {

// The process exit codes of svdserve-cli (also printed by --help).
enum class ExitCode : int {
  ok = 0,
  failed = 1,       // The server answered an error, some items failed, or a local file failed.
  usage = 2,        // Bad command line.
  unreachable = 3,  // UNAVAILABLE or DEADLINE_EXCEEDED: no server, or it did not answer in time.
};

// "OK", "INVALID_ARGUMENT", ... (the shared table, svdserve/status_code_names.hpp); outside
// google.rpc.Code: "UNKNOWN" for a StatusCode, "CODE_<n>" for an int.
[[nodiscard]] std::string_view status_code_name(grpc::StatusCode code) noexcept;
[[nodiscard]] std::string status_code_name(int code);

// "<CODE>: <message>", or just "<CODE>" when the message is empty.
[[nodiscard]] std::string format_status(const grpc::Status& status);

// True for the codes that mean "no usable answer from a server": UNAVAILABLE, DEADLINE_EXCEEDED.
[[nodiscard]] bool is_unreachable(grpc::StatusCode code) noexcept;

[[nodiscard]] ExitCode exit_code_for(const grpc::Status& status) noexcept;

}  // namespace svdserve
