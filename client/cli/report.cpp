#include "client/cli/report.hpp"

#include <regex>
#include <set>
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

namespace {

// The names of the 64-bit integer fields of `type` and of the messages in it.
void int64_field_names(const google::protobuf::Descriptor* type, std::set<std::string>& names,
                       std::set<const google::protobuf::Descriptor*>& seen) {
  if (!seen.insert(type).second) return;
  for (int i = 0; i < type->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = type->field(i);
    switch (field->cpp_type()) {
      case google::protobuf::FieldDescriptor::CPPTYPE_INT64:
      case google::protobuf::FieldDescriptor::CPPTYPE_UINT64:
        names.insert(field->name());
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE:
        int64_field_names(field->message_type(), names, seen);
        break;
      default:
        break;
    }
  }
}

// Protobuf's JSON writes 64-bit integers as strings ("bytes": "1024"); scripts want numbers.
// Unquotes the values of the message's 64-bit integer fields.
std::string with_int64_as_numbers(const std::string& json,
                                  const google::protobuf::Descriptor* type) {
  std::set<std::string> names;
  std::set<const google::protobuf::Descriptor*> seen;
  int64_field_names(type, names, seen);
  static const std::regex kQuotedInteger(R"re("([A-Za-z0-9_]+)": "(-?[0-9]+)")re");
  std::string out;
  auto last = json.cbegin();
  for (std::sregex_iterator it(json.begin(), json.end(), kQuotedInteger), end; it != end; ++it) {
    const std::smatch& match = *it;
    out.append(last, match[0].first);
    out += names.contains(match[1].str()) ? '"' + match[1].str() + "\": " + match[2].str()
                                          : match[0].str();
    last = match[0].second;
  }
  out.append(last, json.cend());
  return out;
}

}  // namespace

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
  text = with_int64_as_numbers(text, message.GetDescriptor());
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
