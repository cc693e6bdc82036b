#include "client/cli/report.hpp"

#include <string>

#include <google/protobuf/util/json_util.h>

namespace svdserve::cli {

int report_error(std::ostream& err, const grpc::Status& status) {
  err << "error: " << format_status(status) << '\n';
  return to_int(exit_code_for(status));
}

int report_error(std::ostream& err, std::string_view message) {
  err << "error: " << message << '\n';
  return to_int(ExitCode::failed);
}

int exit_code_for_items(std::uint64_t succeeded, std::uint64_t failed, std::uint64_t failed_unreachable) noexcept {
  if (failed == 0) return to_int(ExitCode::ok);
  if (succeeded == 0 && failed_unreachable == failed) return to_int(ExitCode::unreachable);
  return to_int(ExitCode::failed);
}

void print_json(std::ostream& out, const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string text;
  const auto status = google::protobuf::util::MessageToJsonString(message, &text, options);
  if (!status.ok()) {
    out << "{\"error\": \"cannot print as JSON\"}\n";
    return;
  }
  out << text;
  if (!text.ends_with('\n')) out << '\n';
}

void ItemTally::succeeded() {
  const std::scoped_lock lock(mutex_);
  ++succeeded_;
}

void ItemTally::failed(grpc::StatusCode code) {
  const std::scoped_lock lock(mutex_);
  ++failed_;
  if (is_unreachable(code)) ++failed_unreachable_;
}

void ItemTally::failed_locally() {
  const std::scoped_lock lock(mutex_);
  ++failed_;
}

std::size_t ItemTally::succeeded_count() const {
  const std::scoped_lock lock(mutex_);
  return succeeded_;
}

std::size_t ItemTally::failed_count() const {
  const std::scoped_lock lock(mutex_);
  return failed_;
}

int ItemTally::exit_code() const {
  const std::scoped_lock lock(mutex_);
  return exit_code_for_items(succeeded_, failed_, failed_unreachable_);
}

}  // namespace svdserve::cli
