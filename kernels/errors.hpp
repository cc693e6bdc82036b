#pragma once
// Typed errors used everywhere below the RPC boundary. server/grpc/status_mapping.cpp turns each kind
// into one gRPC status code; nothing else decides codes.

#include <stdexcept>
#include <string>

namespace svdserve {

enum class ErrorKind {
  invalid_argument,     // The request is malformed or out of limits.
  not_found,            // Unknown or evicted image id.
  permission_denied,    // Not allowed for this caller: a known token whose role does not allow
                        // the call, or a path outside LoadDirectory's roots.
  resource_exhausted,   // Queue full, memory budget, message size.
  failed_precondition,  // The operation is not possible in this server state (e.g. no GPU).
  unavailable,          // Shutting down.
  deadline_exceeded,
  cancelled,
  internal,             // A bug or a failed library call.
  unauthenticated,      // No token, or one the server does not know.
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

#define SVDSERVE_DEFINE_ERROR(Name, kind_value)                                 \
  class Name : public Error {                                                   \
   public:                                                                      \
    explicit Name(const std::string& message) : Error(kind_value, message) {}   \
  };

SVDSERVE_DEFINE_ERROR(InvalidArgument, ErrorKind::invalid_argument)
SVDSERVE_DEFINE_ERROR(NotFound, ErrorKind::not_found)
SVDSERVE_DEFINE_ERROR(PermissionDenied, ErrorKind::permission_denied)
SVDSERVE_DEFINE_ERROR(ResourceExhausted, ErrorKind::resource_exhausted)
SVDSERVE_DEFINE_ERROR(FailedPrecondition, ErrorKind::failed_precondition)
SVDSERVE_DEFINE_ERROR(Unavailable, ErrorKind::unavailable)
SVDSERVE_DEFINE_ERROR(DeadlineExceeded, ErrorKind::deadline_exceeded)
SVDSERVE_DEFINE_ERROR(Cancelled, ErrorKind::cancelled)
SVDSERVE_DEFINE_ERROR(InternalError, ErrorKind::internal)
SVDSERVE_DEFINE_ERROR(Unauthenticated, ErrorKind::unauthenticated)

#undef SVDSERVE_DEFINE_ERROR

// A device whose context is lost (a sticky CUDA error, an uncorrectable ECC error): the work on
// it failed and it can take no more. The multi-device backend takes it out of service and says so
// to clients; its message names the failed call and stays in the server's log.
class DeviceFailure : public Error {
 public:
  explicit DeviceFailure(const std::string& message) : Error(ErrorKind::unavailable, message) {}
};

}  // namespace svdserve
