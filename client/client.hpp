#pragma once
// svdserve::Client: one channel to a svdserve server and one method per RPC of svdserve.v1, plus
// the standard health check. Every call gets its own deadline (ClientOptions::timeout) and
// returns the response or the failed status; nothing throws for a failed RPC. All methods are
// const and thread-safe: share one Client between threads. Calls keyed by an image id carry it
// in the routing header (image_id_header.hpp) for a load balancer in front of several servers.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include "client/call_result.hpp"
#include "client/channel_credentials.hpp"
#include "svdserve/v1/svdserve.grpc.pb.h"

namespace svdserve {

inline constexpr std::string_view kDefaultTarget = "localhost:50051";
inline constexpr int kDefaultMaxMessageBytes = 64 * 1024 * 1024;  // Matches the server's default.
inline constexpr std::chrono::milliseconds kDefaultCallTimeout = std::chrono::seconds(60);

struct ClientOptions {
  // Deadline of each call; for a streaming call, of the whole stream. Zero: no deadline.
  std::chrono::milliseconds timeout = kDefaultCallTimeout;
  int max_send_message_bytes = kDefaultMaxMessageBytes;
  int max_receive_message_bytes = kDefaultMaxMessageBytes;
  // false: a call fails at once with UNAVAILABLE when the server cannot be reached (what a CLI
  // wants). true: it waits for the connection up to its deadline (what a test starting a server
  // wants).
  bool wait_for_ready = false;
  // true: this client opens its own connection instead of sharing one with every other client
  // of the same target and options (gRPC's global subchannel pool). A load generator wants
  // several: one HTTP/2 connection carries all its calls over one TCP stream.
  bool dedicated_connection = false;
  // nullopt: plaintext. Set: TLS; the Client's constructor reads the files and throws
  // std::runtime_error when it cannot.
  std::optional<ClientTls> tls{};
  // Sent as `authorization: Bearer <token>` metadata on every call (a server with a token file
  // wants one); empty: none. Metadata rather than call credentials, which gRPC sends only over
  // TLS.
  std::string bearer_token{};
};

// The rank of a reconstruction: a fixed k, or the smallest k keeping a fraction of the energy.
struct Rank {
  std::uint32_t value = 0;
};
struct EnergyFraction {
  double value = 0.0;
};
using RankChoice = std::variant<Rank, EnergyFraction>;

enum class HealthStatus { unknown, serving, not_serving, service_unknown };
[[nodiscard]] std::string_view health_status_name(HealthStatus status) noexcept;  // "SERVING", ...

class Client {
 public:
  // target: "host:port" or any gRPC target URI. Creates the channel; connects lazily.
  explicit Client(std::string target, ClientOptions options = {});

  [[nodiscard]] const std::string& target() const noexcept { return target_; }
  [[nodiscard]] const ClientOptions& options() const noexcept { return options_; }
  [[nodiscard]] const std::shared_ptr<grpc::Channel>& channel() const noexcept { return channel_; }
  // For calls this class does not wrap. Use new_context() for the deadline, the token and, for
  // a call about one image, the routing header (none for an empty or an over-long id).
  [[nodiscard]] v1::SvdServe::Stub& stub() const noexcept { return *stub_; }
  [[nodiscard]] std::unique_ptr<grpc::ClientContext> new_context(std::string_view image_id = {}) const;

  // Waits until the channel is connected or the timeout passes; true when connected.
  [[nodiscard]] bool wait_for_connected(std::chrono::milliseconds timeout) const;

  // Decompose: encoded image bytes (PNG, JPEG, ...). max_rank 0 and an empty id leave the choice
  // to the server.
  CallResult<v1::DecomposeResponse> decompose(std::string encoded_image, std::uint32_t max_rank = 0,
                                              std::string id = {}) const;
  CallResult<v1::DecomposeResponse> decompose(const v1::DecomposeRequest& request) const;

  CallResult<v1::ReconstructResponse> reconstruct(
      std::string id, RankChoice rank, v1::OutputFormat format = v1::OUTPUT_FORMAT_RAW_U8) const;
  CallResult<v1::ReconstructResponse> reconstruct(const v1::ReconstructRequest& request) const;

  // The routing header names the first item's id: a batch goes to one server.
  CallResult<v1::ReconstructBatchResponse> reconstruct_batch(
      const v1::ReconstructBatchRequest& request) const;

  // ReconstructStream: writes every request (from a second thread, so reading never waits on
  // writing) and hands each response to on_response with the index of its request, in order.
  // Returns the stream's final status; an item's own failure is in its response, not here. A
  // stream that ends early with an OK status is reported as DATA_LOSS. The routing header names
  // the first request's id: a stream goes to one server.
  using StreamResponseHandler =
      std::function<void(std::size_t index, v1::ReconstructStreamResponse& response)>;
  grpc::Status reconstruct_stream(std::span<const v1::ReconstructRequest> requests,
                                  const StreamResponseHandler& on_response) const;
  // The same, collecting the responses.
  CallResult<std::vector<v1::ReconstructStreamResponse>> reconstruct_stream(
      std::span<const v1::ReconstructRequest> requests) const;

  CallResult<std::vector<v1::ReconstructResponse>> reconstruct_progressive(
      const v1::ReconstructProgressiveRequest& request) const;

  CallResult<v1::CompressResponse> compress(std::string encoded_image, RankChoice rank,
                                            v1::OutputFormat format = v1::OUTPUT_FORMAT_RAW_U8) const;
  CallResult<v1::CompressResponse> compress(const v1::CompressRequest& request) const;

  CallResult<v1::GetImageResponse> get_image(std::string id, bool include_singular_values = false) const;
  // One page of images in id order; follow next_page_token for the rest (page_size 0: the
  // server's default).
  CallResult<v1::ListImagesResponse> list_images(bool include_evicted = false,
                                                 std::uint32_t page_size = 0,
                                                 std::string page_token = {}) const;
  CallResult<v1::DeleteImageResponse> delete_image(std::string id) const;
  CallResult<v1::LoadDirectoryResponse> load_directory(std::string server_path, std::uint32_t max_rank = 0,
                                                       bool recursive = false) const;

  CallResult<v1::GetServerInfoResponse> server_info() const;
  CallResult<v1::GetStatsResponse> stats() const;
  // The transport alone: the server answers response_bytes bytes without touching the pipeline.
  CallResult<v1::EchoResponse> echo(const v1::EchoRequest& request) const;
  grpc::Status start_profiling() const;
  grpc::Status stop_profiling() const;

  // grpc.health.v1.Health/Check; service "" is the whole server.
  CallResult<HealthStatus> health(std::string service = {}) const;

 private:
  std::string target_;
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::SvdServe::Stub> stub_;
};

// An item's status inside a stream or LoadDirectory answer, as a grpc::Status.
[[nodiscard]] grpc::Status item_status(const v1::ItemStatus& status);

// Puts the rank choice into a ReconstructRequest or CompressRequest.
template <class Request>
void set_rank_choice(Request& request, const RankChoice& rank) {
  if (const auto* fixed = std::get_if<Rank>(&rank)) {
    request.set_rank(fixed->value);
  } else {
    request.set_energy_fraction(std::get<EnergyFraction>(rank).value);
  }
}

}  // namespace svdserve
