#pragma once
// The one place where internal errors become gRPC statuses (the RPC boundary).

#include <grpcpp/support/status.h>

#include <cstddef>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace svdserve {

// The longest status message answered: gRPC refuses trailers past its metadata limit (8 KiB by
// default), and a message that echoes a client's text must not turn into that transport error.
inline constexpr std::size_t kMaxStatusMessageBytes = 1024;

// svdserve::Error -> its code and its message, shortened to kMaxStatusMessageBytes; any other
// exception -> INTERNAL, its message logged rather than answered.
[[nodiscard]] grpc::Status to_status(std::exception_ptr error);

// `text` if it is at most max_bytes long; else at most max_bytes of its start, cut at a UTF-8
// character boundary, and "…" (three bytes more).
[[nodiscard]] std::string shortened(std::string_view text, std::size_t max_bytes);

// OK and every code to_status answers with: the codes a user of svdserve sees.
[[nodiscard]] std::vector<grpc::StatusCode> answered_codes();

// "OK", "INVALID_ARGUMENT", ... as gRPC spells them (the table shared with the client);
// "CODE_<n>" outside google.rpc.Code.
[[nodiscard]] std::string code_name(grpc::StatusCode code);

}  // namespace svdserve
