#include "server/grpc/status_mapping.hpp"

#include "kernels/errors.hpp"
#include "server/runtime/logger.hpp"
#include "svdserve/status_code_names.hpp"

namespace svdserve {
namespace {

constexpr std::string_view kEllipsis = "…";

grpc::StatusCode code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_argument: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorKind::not_found: return grpc::StatusCode::NOT_FOUND;
    case ErrorKind::permission_denied: return grpc::StatusCode::PERMISSION_DENIED;
    case ErrorKind::resource_exhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ErrorKind::failed_precondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorKind::unavailable: return grpc::StatusCode::UNAVAILABLE;
    case ErrorKind::deadline_exceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case ErrorKind::cancelled: return grpc::StatusCode::CANCELLED;
    case ErrorKind::internal: return grpc::StatusCode::INTERNAL;
    case ErrorKind::unauthenticated: return grpc::StatusCode::UNAUTHENTICATED;
  }
  return grpc::StatusCode::INTERNAL;
}

}  // namespace

std::string shortened(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  constexpr unsigned char kContinuationMask = 0xC0, kContinuation = 0x80;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & kContinuationMask) == kContinuation) {
    --cut;
  }
  return std::string(text.substr(0, cut)) + std::string(kEllipsis);
}

std::vector<grpc::StatusCode> answered_codes() {
  std::vector<grpc::StatusCode> codes{grpc::StatusCode::OK};
  for (ErrorKind kind : {ErrorKind::invalid_argument, ErrorKind::not_found,
                         ErrorKind::permission_denied, ErrorKind::resource_exhausted,
                         ErrorKind::failed_precondition, ErrorKind::unavailable,
                         ErrorKind::deadline_exceeded, ErrorKind::cancelled,
                         ErrorKind::internal, ErrorKind::unauthenticated}) {
    codes.push_back(code_for(kind));
  }
  return codes;
}

grpc::Status to_status(std::exception_ptr error) {
  if (!error) return grpc::Status::OK;
  try {
    std::rethrow_exception(error);
  } catch (const DeviceFailure& e) {
    // The backend says which device failed in its own Unavailable; this one names a CUDA call.
    log().error("device failure: {}", e.what());
    return {grpc::StatusCode::UNAVAILABLE, "a GPU of the server failed; retry"};
  } catch (const Error& e) {
    return {code_for(e.kind()), shortened(e.what(), kMaxStatusMessageBytes - kEllipsis.size())};
  } catch (const std::bad_alloc&) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, "server ran out of host memory"};
  } catch (const std::exception& e) {
    // Not one of ours: its message speaks of a library's internals (OpenCV's name its sources).
    log().error("internal error: {}", e.what());
    return {grpc::StatusCode::INTERNAL, "internal error (the server's log has the details)"};
  } catch (...) {
    return {grpc::StatusCode::INTERNAL, "internal error"};
  }
}

std::string code_name(grpc::StatusCode code) { return status_code_text(static_cast<int>(code)); }

}  // namespace svdserve
