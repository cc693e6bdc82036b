#pragma once
// The one place where internal errors become gRPC statuses (the RPC boundary).

#include <grpcpp/support/status.h>

#include <exception>
#include <string>
#include <vector>

namespace svdserve {

// svdserve::Error -> its code; any other exception -> INTERNAL. The message is the exception's.
[[nodiscard]] grpc::Status to_status(std::exception_ptr error);

// OK and every code to_status answers with: the codes a user of svdserve sees.
[[nodiscard]] std::vector<grpc::StatusCode> answered_codes();

// "OK", "INVALID_ARGUMENT", ... as gRPC spells them (the table shared with the client);
// "CODE_<n>" outside google.rpc.Code.
[[nodiscard]] std::string code_name(grpc::StatusCode code);

}  // namespace svdserve
