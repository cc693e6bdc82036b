#include "client/status_text.hpp"

#include <array>

namespace svdserve {
namespace {

// Indexed by google.rpc.Code.
constexpr std::array<std::string_view, 17> kCodeNames = {
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

}  // namespace

std::string_view status_code_name(grpc::StatusCode code) noexcept {
  const auto index = static_cast<int>(code);
  if (index < 0 || index >= static_cast<int>(kCodeNames.size())) return "UNKNOWN";
  return kCodeNames[static_cast<std::size_t>(index)];
}

std::string status_code_name(int code) {
  if (code < 0 || code >= static_cast<int>(kCodeNames.size())) {
    return "CODE_" + std::to_string(code);
  }
  return std::string(kCodeNames[static_cast<std::size_t>(code)]);
}

std::string format_status(const grpc::Status& status) {
  std::string text(status_code_name(status.error_code()));
  if (!status.error_message().empty()) {
    text += ": ";
    text += status.error_message();
  }
  return text;
}

bool is_unreachable(grpc::StatusCode code) noexcept {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED;
}

ExitCode exit_code_for(const grpc::Status& status) noexcept {
  if (status.ok()) return ExitCode::ok;
  return is_unreachable(status.error_code()) ? ExitCode::unreachable : ExitCode::failed;
}

}  // namespace svdserve
