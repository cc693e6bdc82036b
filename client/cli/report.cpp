#include "client/cli/report.hpp"

#include <array>
#include <cstdio>

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

std::string shape_text(const v1::Shape& shape) {
  return std::to_string(shape.width()) + "x" + std::to_string(shape.height()) + "x" +
         std::to_string(shape.channels());
}

std::string bytes_text(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  constexpr double kStep = 1024.0;
  if (static_cast<double>(bytes) < kStep) return std::to_string(bytes) + " B";
  auto value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= kStep && unit + 1 < kUnits.size()) {
    value /= kStep;
    ++unit;
  }
  return fixed_text(value, 1) + " " + std::string(kUnits[unit]);
}

std::string ms_text(double microseconds) { return fixed_text(microseconds / 1000.0, 2); }

std::string fixed_text(double value, int decimals) {
  std::array<char, 64> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.*f", decimals, value);
  return buffer.data();
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
  if (failed_ == 0) return to_int(ExitCode::ok);
  if (succeeded_ == 0 && failed_unreachable_ == failed_) return to_int(ExitCode::unreachable);
  return to_int(ExitCode::failed);
}

}  // namespace svdserve::cli
