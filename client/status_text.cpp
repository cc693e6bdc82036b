#include "client/status_text.hpp"

#include "svdserve/status_code_names.hpp"

namespace svdserve {

std::string_view status_code_name(grpc::StatusCode code) noexcept {
  const std::string_view name = known_status_code_name(static_cast<int>(code));
  return name.empty() ? "UNKNOWN" : name;
}

std::string status_code_name(int code) { return status_code_text(code); }

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
