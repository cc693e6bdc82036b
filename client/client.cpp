#include "client/client.hpp"

#include <thread>
#include <utility>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "client/image_id_header.hpp"
#include "grpc/health/v1/health.grpc.pb.h"

namespace svdserve {
namespace {

std::shared_ptr<grpc::Channel> make_channel(const std::string& target, const ClientOptions& options) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxSendMessageSize(options.max_send_message_bytes);
  arguments.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  if (options.dedicated_connection) arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(
      target,
      options.tls ? tls_channel_credentials(*options.tls) : grpc::InsecureChannelCredentials(),
      arguments);
}

// One unary call: a fresh context (with the routing header for image_id), the call, the
// response or the status.
template <class Response, class Request, class Method>
CallResult<Response> unary(const Client& client, Method method, const Request& request,
                           std::string_view image_id = {}) {
  const auto context = client.new_context(image_id);
  Response response;
  grpc::Status status = (client.stub().*method)(context.get(), request, &response);
  if (!status.ok()) return status;
  return response;
}

}  // namespace

std::string_view health_status_name(HealthStatus status) noexcept {
  switch (status) {
    case HealthStatus::serving: return "SERVING";
    case HealthStatus::not_serving: return "NOT_SERVING";
    case HealthStatus::service_unknown: return "SERVICE_UNKNOWN";
    case HealthStatus::unknown: break;
  }
  return "UNKNOWN";
}

grpc::Status item_status(const v1::ItemStatus& status) {
  return {static_cast<grpc::StatusCode>(status.code()), status.message()};
}

Client::Client(std::string target, ClientOptions options)
    : target_(std::move(target)),
      options_(options),
      channel_(make_channel(target_, options_)),
      stub_(v1::SvdServe::NewStub(channel_)) {}

std::unique_ptr<grpc::ClientContext> Client::new_context(std::string_view image_id) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (options_.timeout.count() > 0) {
    context->set_deadline(std::chrono::system_clock::now() + options_.timeout);
  }
  context->set_wait_for_ready(options_.wait_for_ready);
  if (!options_.bearer_token.empty()) {
    context->AddMetadata("authorization", "Bearer " + options_.bearer_token);
  }
  if (std::string value = image_id_header_value(image_id); !value.empty()) {
    context->AddMetadata(std::string(kImageIdHeader), std::move(value));
  }
  return context;
}

bool Client::wait_for_connected(std::chrono::milliseconds timeout) const {
  return channel_->WaitForConnected(std::chrono::system_clock::now() + timeout);
}

CallResult<v1::DecomposeResponse> Client::decompose(std::string encoded_image, std::uint32_t max_rank,
                                                    std::string id) const {
  v1::DecomposeRequest request;
  request.mutable_image()->set_encoded(std::move(encoded_image));
  request.set_max_rank(max_rank);
  request.set_id(std::move(id));
  return decompose(request);
}

CallResult<v1::DecomposeResponse> Client::decompose(const v1::DecomposeRequest& request) const {
  return unary<v1::DecomposeResponse>(*this, &v1::SvdServe::Stub::Decompose, request,
                                            request.id());
}

CallResult<v1::ReconstructResponse> Client::reconstruct(std::string id, RankChoice rank,
                                                        v1::OutputFormat format) const {
  v1::ReconstructRequest request;
  request.set_id(std::move(id));
  set_rank_choice(request, rank);
  request.set_format(format);
  return reconstruct(request);
}

CallResult<v1::ReconstructResponse> Client::reconstruct(const v1::ReconstructRequest& request) const {
  return unary<v1::ReconstructResponse>(*this, &v1::SvdServe::Stub::Reconstruct, request,
                                              request.id());
}

CallResult<v1::ReconstructBatchResponse> Client::reconstruct_batch(
    const v1::ReconstructBatchRequest& request) const {
  const std::string_view first_id = request.items().empty() ? std::string_view{} : request.items(0).id();
  return unary<v1::ReconstructBatchResponse>(*this, &v1::SvdServe::Stub::ReconstructBatch, request,
                                             first_id);
}

grpc::Status Client::reconstruct_stream(std::span<const v1::ReconstructRequest> requests,
                                        const StreamResponseHandler& on_response) const {
  const auto context = new_context(requests.empty() ? std::string_view{} : requests.front().id());
  const auto stream = stub_->ReconstructStream(context.get());

  // Writing on its own thread: the server answers while we still write, and large responses
  // would otherwise stall on flow control.
  std::jthread writer([&] {
    for (const auto& request : requests) {
      if (!stream->Write(request)) return;  // The stream is broken; Finish() says why.
    }
    stream->WritesDone();
  });

  std::size_t received = 0;
  try {
    v1::ReconstructStreamResponse response;
    while (stream->Read(&response)) {
      on_response(received, response);
      ++received;
    }
  } catch (...) {
    context->TryCancel();
    writer.join();
    static_cast<void>(stream->Finish());
    throw;
  }
  writer.join();
  grpc::Status status = stream->Finish();
  if (status.ok() && received != requests.size()) {
    return {grpc::StatusCode::DATA_LOSS, "the stream ended after " + std::to_string(received) +
                                             " of " + std::to_string(requests.size()) + " responses"};
  }
  return status;
}

CallResult<std::vector<v1::ReconstructStreamResponse>> Client::reconstruct_stream(
    std::span<const v1::ReconstructRequest> requests) const {
  std::vector<v1::ReconstructStreamResponse> responses;
  responses.reserve(requests.size());
  grpc::Status status = reconstruct_stream(
      requests, [&](std::size_t, v1::ReconstructStreamResponse& response) {
        responses.push_back(std::move(response));
      });
  if (!status.ok()) return status;
  return responses;
}

CallResult<std::vector<v1::ReconstructResponse>> Client::reconstruct_progressive(
    const v1::ReconstructProgressiveRequest& request) const {
  const auto context = new_context(request.id());
  const auto reader = stub_->ReconstructProgressive(context.get(), request);
  std::vector<v1::ReconstructResponse> responses;
  v1::ReconstructResponse response;
  while (reader->Read(&response)) responses.push_back(std::move(response));
  grpc::Status status = reader->Finish();
  if (!status.ok()) return status;
  return responses;
}

CallResult<v1::CompressResponse> Client::compress(std::string encoded_image, RankChoice rank,
                                                  v1::OutputFormat format) const {
  v1::CompressRequest request;
  request.mutable_image()->set_encoded(std::move(encoded_image));
  set_rank_choice(request, rank);
  request.set_format(format);
  return compress(request);
}

CallResult<v1::CompressResponse> Client::compress(const v1::CompressRequest& request) const {
  return unary<v1::CompressResponse>(*this, &v1::SvdServe::Stub::Compress, request);
}

CallResult<v1::GetImageResponse> Client::get_image(std::string id, bool include_singular_values) const {
  v1::GetImageRequest request;
  request.set_id(std::move(id));
  request.set_include_singular_values(include_singular_values);
  return unary<v1::GetImageResponse>(*this, &v1::SvdServe::Stub::GetImage, request, request.id());
}

CallResult<v1::ListImagesResponse> Client::list_images(bool include_evicted,
                                                      std::uint32_t page_size,
                                                      std::string page_token) const {
  v1::ListImagesRequest request;
  request.set_include_evicted(include_evicted);
  request.set_page_size(page_size);
  request.set_page_token(std::move(page_token));
  return unary<v1::ListImagesResponse>(*this, &v1::SvdServe::Stub::ListImages, request);
}

CallResult<v1::DeleteImageResponse> Client::delete_image(std::string id) const {
  v1::DeleteImageRequest request;
  request.set_id(std::move(id));
  return unary<v1::DeleteImageResponse>(*this, &v1::SvdServe::Stub::DeleteImage, request,
                                        request.id());
}

CallResult<v1::LoadDirectoryResponse> Client::load_directory(std::string server_path, std::uint32_t max_rank,
                                                             bool recursive) const {
  v1::LoadDirectoryRequest request;
  request.set_path(std::move(server_path));
  request.set_max_rank(max_rank);
  request.set_recursive(recursive);
  return unary<v1::LoadDirectoryResponse>(*this, &v1::SvdServe::Stub::LoadDirectory, request);
}

CallResult<v1::GetServerInfoResponse> Client::server_info() const {
  return unary<v1::GetServerInfoResponse>(*this, &v1::SvdServe::Stub::GetServerInfo,
                                          v1::GetServerInfoRequest{});
}

CallResult<v1::GetStatsResponse> Client::stats() const {
  return unary<v1::GetStatsResponse>(*this, &v1::SvdServe::Stub::GetStats, v1::GetStatsRequest{});
}

CallResult<v1::EchoResponse> Client::echo(const v1::EchoRequest& request) const {
  return unary<v1::EchoResponse>(*this, &v1::SvdServe::Stub::Echo, request);
}

grpc::Status Client::start_profiling() const {
  return unary<v1::StartProfilingResponse>(*this, &v1::SvdServe::Stub::StartProfiling,
                                           v1::StartProfilingRequest{})
      .status();
}

grpc::Status Client::stop_profiling() const {
  return unary<v1::StopProfilingResponse>(*this, &v1::SvdServe::Stub::StopProfiling,
                                          v1::StopProfilingRequest{})
      .status();
}

CallResult<HealthStatus> Client::health(std::string service) const {
  using grpc::health::v1::HealthCheckResponse;
  const auto health_stub = grpc::health::v1::Health::NewStub(channel_);
  const auto context = new_context();
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(std::move(service));
  HealthCheckResponse response;
  grpc::Status status = health_stub->Check(context.get(), request, &response);
  if (!status.ok()) return status;
  switch (response.status()) {
    case HealthCheckResponse::SERVING: return HealthStatus::serving;
    case HealthCheckResponse::NOT_SERVING: return HealthStatus::not_serving;
    case HealthCheckResponse::SERVICE_UNKNOWN: return HealthStatus::service_unknown;
    default: return HealthStatus::unknown;
  }
}

}  // namespace svdserve
