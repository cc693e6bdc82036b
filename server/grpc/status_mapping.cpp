#include "server/grpc/status_mapping.hpp"

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

grpc::StatusCode code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_argument: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorKind::not_found: return grpc::StatusCode::NOT_FOUND;
    case ErrorKind::resource_exhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ErrorKind::failed_precondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorKind::unavailable: return grpc::StatusCode::UNAVAILABLE;
    case ErrorKind::deadline_exceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case ErrorKind::cancelled: return grpc::StatusCode::CANCELLED;
    case ErrorKind::internal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;
}

}  // namespace

grpc::Status to_status(std::exception_ptr error) {
  if (!error) return grpc::Status::OK;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return {code_for(e.kind()), e.what()};
  } catch (const std::bad_alloc&) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, "server ran out of host memory"};
  } catch (const std::exception& e) {
    return {grpc::StatusCode::INTERNAL, std::string("internal error: ") + e.what()};
  } catch (...) {
    return {grpc::StatusCode::INTERNAL, "internal error"};
  }
}

std::string code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "CODE_" + std::to_string(static_cast<int>(code));
  }
}

}  // namespace svdserve
