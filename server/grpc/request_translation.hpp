#pragma once
// Requests into the runtime's terms (server/runtime/job.hpp): the image a request carries, the
// output format, the deadline. The runtime never sees a protobuf message.

#include <grpcpp/support/byte_buffer.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "server/runtime/job.hpp"
#include "svdserve/v1/svdserve.pb.h"

namespace svdserve {

// The longest image id an RPC takes, in bytes.
inline constexpr std::size_t kMaxImageIdBytes = 256;

// Every RPC that takes or makes an image id checks it here: InvalidArgument, without echoing it,
// when it is longer than kMaxImageIdBytes or holds control characters. Empty passes (Decompose
// then names the image; the other calls say so or answer NOT_FOUND).
void check_image_id(std::string_view id);

// Client text (an id, a path) as error messages quote it: in quotes, cut after kMaxImageIdBytes
// with an ellipsis, so that no answer outgrows gRPC's metadata limit.
[[nodiscard]] std::string quote_client_text(std::string_view text);

// Views into `input` (which must outlive the job): encoded bytes or raw samples; nothing set is
// std::monostate, which the decoder refuses with a message. An unknown pixel type is left unset.
[[nodiscard]] ImageSource image_source_of(const v1::ImageInput& input);

// UNSPECIFIED is RAW_U8; InvalidArgument for a value the API does not define.
[[nodiscard]] OutputFormat output_format_of(v1::OutputFormat format);
[[nodiscard]] v1::OutputFormat to_proto(OutputFormat format) noexcept;

// A request's jpeg_quality: 0 is the default (kDefaultJpegQuality); InvalidArgument above 100.
[[nodiscard]] uint32_t jpeg_quality_of(uint32_t requested);

// The energy fraction of a request whose rank_choice is one (ReconstructRequest, CompressRequest).
template <typename Request>
[[nodiscard]] std::optional<double> energy_fraction_of(const Request& request) {
  if (request.rank_choice_case() != Request::kEnergyFraction) return std::nullopt;
  return request.energy_fraction();
}

// A gRPC deadline (system clock) on the pipeline's steady clock; none stays none.
[[nodiscard]] Clock::time_point to_steady_deadline(std::chrono::system_clock::time_point deadline);

// A raw method's request, parsed as the generated code does for a typed method, except that
// malformed bytes are INVALID_ARGUMENT with a message naming the type (gRPC's typed callback
// handler answers UNIMPLEMENTED, no message). No bytes are the empty message.
void parse_request(const grpc::ByteBuffer& bytes, google::protobuf::MessageLite& request);
[[nodiscard]] v1::ReconstructRequest parse_reconstruct_request(const grpc::ByteBuffer& bytes);

}  // namespace svdserve
