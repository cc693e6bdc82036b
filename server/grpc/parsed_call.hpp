#pragma once
// A typed unary method served as a raw one. gRPC's typed callback handler answers request bytes
// it cannot parse with UNIMPLEMENTED and no message; served raw, the server parses them itself
// (parse_request: INVALID_ARGUMENT naming the message type). The request and the response live
// as long as the call's UnaryCall copies; the response becomes the call's bytes as the call
// finishes OK (UnaryCall::finish), as gRPC's typed handler would serialize it.

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

namespace svdserve {

// What UnaryCall knows of a typed call: how to turn its response into the call's bytes.
class ResponseSerializer {
 public:
  virtual ~ResponseSerializer() = default;
  [[nodiscard]] virtual grpc::Status serialize_response() = 0;
};

template <typename Request, typename Response>
class ParsedCall final : public ResponseSerializer {
 public:
  explicit ParsedCall(grpc::ByteBuffer* response_bytes) noexcept
      : response_bytes_(response_bytes) {}

  Request request;    // parsed by the handler's helper before the handler runs
  Response response;  // filled by the handler

  [[nodiscard]] grpc::Status serialize_response() override {
    bool own_buffer = false;
    return grpc::SerializationTraits<Response>::Serialize(response, response_bytes_, &own_buffer);
  }

 private:
  grpc::ByteBuffer* response_bytes_;  // gRPC's, valid until the call's OnDone
};

}  // namespace svdserve
