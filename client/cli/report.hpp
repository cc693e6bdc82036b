#pragma once
// What the commands print: errors as "error: <CODE>: <message>", sizes, shapes, messages as
// JSON, and the exit code of a command over many items.

#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>
#include <grpcpp/support/status.h>

#include "client/status_text.hpp"
#include "svdserve/v1/svdserve.pb.h"

namespace svdserve::cli {

// "error: <CODE>: <message>" on err; returns the exit code for the status.
int report_error(std::ostream& err, const grpc::Status& status);
// "error: <message>" for local failures (files); returns ExitCode::failed.
int report_error(std::ostream& err, std::string_view message);

[[nodiscard]] constexpr int to_int(ExitCode code) noexcept { return static_cast<int>(code); }

// "640x480x3".
[[nodiscard]] std::string shape_text(const v1::Shape& shape);
// "12.3 MiB", "512 B".
[[nodiscard]] std::string bytes_text(std::uint64_t bytes);
// Microseconds as milliseconds with 2 decimals: "12.34".
[[nodiscard]] std::string ms_text(double microseconds);
// Fixed decimals: "0.0423".
[[nodiscard]] std::string fixed_text(double value, int decimals);

// The message in the proto3 JSON mapping, field names as in the .proto, defaults included.
void print_json(std::ostream& out, const google::protobuf::Message& message);

// Counts the items of a many-item command and decides its exit code: 0 when all succeeded; 3
// when none succeeded and every failure was UNAVAILABLE/DEADLINE_EXCEEDED; else 1. Thread-safe.
class ItemTally {
 public:
  void succeeded();
  void failed(grpc::StatusCode code);
  void failed_locally();  // A file could not be read or written.

  [[nodiscard]] std::size_t succeeded_count() const;
  [[nodiscard]] std::size_t failed_count() const;
  [[nodiscard]] int exit_code() const;

 private:
  mutable std::mutex mutex_;
  std::size_t succeeded_ = 0;            // Guarded by mutex_.
  std::size_t failed_ = 0;               // Guarded by mutex_.
  std::size_t failed_unreachable_ = 0;   // Guarded by mutex_.
};

}  // namespace svdserve::cli
