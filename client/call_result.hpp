#pragma once
// The outcome of one RPC: the response, or the failed status. Like std::expected<T, grpc::Status>
// (C++23) for what the client needs.

#include <optional>
#include <stdexcept>
#include <utility>

#include <grpcpp/support/status.h>

namespace svdserve {

class BadCallResultAccess : public std::logic_error {
 public:
  BadCallResultAccess() : std::logic_error("CallResult::value() on a failed call") {}
};

template <class T>
class [[nodiscard]] CallResult {
 public:
  CallResult(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose, like expected.
  // A failed call. An OK status without a value is a bug in the caller; it reads as UNKNOWN.
  CallResult(grpc::Status status)  // NOLINT
      : status_(status.ok() ? grpc::Status(grpc::StatusCode::UNKNOWN, "no result") : std::move(status)) {}

  [[nodiscard]] bool ok() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }

  // OK when the call succeeded.
  [[nodiscard]] const grpc::Status& status() const noexcept { return status_; }

  // Throw BadCallResultAccess when the call failed.
  [[nodiscard]] T& value() & { return checked(value_); }
  [[nodiscard]] const T& value() const& { return checked(value_); }
  [[nodiscard]] T&& value() && { return std::move(checked(value_)); }

  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  template <class Optional>
  static auto& checked(Optional& value) {
    if (!value) throw BadCallResultAccess();
    return *value;
  }

  std::optional<T> value_;
  grpc::Status status_;  // OK unless the call failed.
};

}  // namespace svdserve
