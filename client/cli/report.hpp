#pragma once
// What the commands print besides their results: errors as "error: <CODE>: <message>", messages
// as JSON, and the exit code of a command over many items.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string_view>

#include <google/protobuf/message.h>
#include <grpcpp/support/status.h>

#include "client/status_text.hpp"

namespace svdserve::cli {

// "error: <CODE>: <message>" on err; returns the exit code for the status.
int report_error(std::ostream& err, const grpc::Status& status);
// "error: <message>" for local failures (files); returns ExitCode::failed.
int report_error(std::ostream& err, std::string_view message);

[[nodiscard]] constexpr int to_int(ExitCode code) noexcept { return static_cast<int>(code); }

// The exit code of many calls: 0 when none failed; 3 when none succeeded and every failure was
// UNAVAILABLE/DEADLINE_EXCEEDED (no server answered); else 1.
[[nodiscard]] int exit_code_for_items(std::uint64_t succeeded, std::uint64_t failed,
                                      std::uint64_t failed_unreachable) noexcept;

// The message in the proto3 JSON mapping, field names as in the .proto, defaults included.
void print_json(std::ostream& out, const google::protobuf::Message& message);

// Counts the items of a many-item command for exit_code_for_items. Thread-safe.
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
