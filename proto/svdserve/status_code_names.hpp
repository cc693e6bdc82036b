#pragma once
// gRPC's names for google.rpc.Code values: the text GetStats reports per code
// (MethodStats.codes) and the CLI prints. One table for the server and the client, so that both
// spell a code the same way. No gRPC header: codes are ints here.

#include <array>
#include <string>
#include <string_view>

namespace svdserve {

// Indexed by google.rpc.Code.
inline constexpr std::array<std::string_view, 17> kStatusCodeNames = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

// The name of a google.rpc.Code value; empty for a value outside it.
[[nodiscard]] constexpr std::string_view known_status_code_name(int code) noexcept {
  if (code < 0 || code >= static_cast<int>(kStatusCodeNames.size())) return {};
  return kStatusCodeNames[static_cast<std::size_t>(code)];
}

// The name, or "CODE_<n>" for a value outside google.rpc.Code.
[[nodiscard]] inline std::string status_code_text(int code) {
  const std::string_view name = known_status_code_name(code);
  return name.empty() ? "CODE_" + std::to_string(code) : std::string(name);
}

}  // namespace svdserve
