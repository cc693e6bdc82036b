#pragma once
// Why: a reconstruction is megabytes, and serialising a protobuf message copies its `bytes`
// field into gRPC's buffers (after the pixels were already copied into the message). Instead,
// the raw Reconstruct handler answers with a ByteBuffer that protobuf never sees whole: the
// response's other fields, serialised by protobuf, then the `pixels` field's tag and length,
// then a slice that wraps the pixel buffer itself. The slice owns the buffer and gives it back
// (to the host buffer pool) when gRPC has sent it. The bytes on the wire are an ordinary
// ReconstructResponse (or ReconstructStreamResponse): protobuf parsers accept fields in any order,
// so stock clients (our client, ghz, grpcurl) read it unchanged.

#include <grpcpp/support/byte_buffer.h>

#include "server/runtime/pixel_bytes.hpp"
#include "svdserve/v1/svdserve.pb.h"

namespace svdserve {

// `fields` is the response without pixels (InternalError if it has some); `pixels` are moved
// into the result and released with it.
[[nodiscard]] grpc::ByteBuffer encode_reconstruct_response(const v1::ReconstructResponse& fields,
                                                           PixelBytes pixels);

// The same as the `result` of a ReconstructStreamResponse whose status is OK (the raw
// ReconstructStream's answer to one request).
[[nodiscard]] grpc::ByteBuffer encode_reconstruct_stream_response(
    const v1::ReconstructResponse& fields, PixelBytes pixels);

// Any message, serialised into one slice (the raw methods' small answers).
[[nodiscard]] grpc::ByteBuffer encode_message(const google::protobuf::MessageLite& message);

}  // namespace svdserve
