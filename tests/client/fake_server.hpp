#pragma once
// An in-process stand-in for the svdserve server, for testing the client without the real one.
// It decodes nothing: an "encoded image" is the text "WxHxC" (anything else is INVALID_ARGUMENT),
// every image keeps rank min(max_rank or 8, 8), and pixel bytes are filled with the rank. Echo
// answers like the real one. It remembers the routing header each method last received.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "client/image_id_header.hpp"
#include "svdserve/v1/svdserve.grpc.pb.h"

namespace svdserve::testing {

class FakeSvdServe final : public v1::SvdServe::Service {
 public:
  static constexpr std::uint32_t kFullRank = 8;

  grpc::Status Decompose(grpc::ServerContext* context, const v1::DecomposeRequest* request,
                         v1::DecomposeResponse* response) override {
    note_routing_header("Decompose", *context);
    v1::Shape shape;
    if (!parse_shape(request->image().encoded(), shape)) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "cannot decode the image"};
    }
    const std::scoped_lock lock(mutex_);
    std::string id = request->id().empty() ? "image-" + std::to_string(images_.size()) : request->id();
    const std::uint32_t rank = request->max_rank() == 0 ? kFullRank : std::min(request->max_rank(), kFullRank);
    images_[id] = Stored{shape, rank};
    response->set_id(id);
    *response->mutable_shape() = shape;
    response->set_rank_kept(rank);
    response->set_bytes_resident(1000);
    return grpc::Status::OK;
  }

  grpc::Status Reconstruct(grpc::ServerContext* context, const v1::ReconstructRequest* request,
                           v1::ReconstructResponse* response) override {
    note_routing_header("Reconstruct", *context);
    return reconstruct(*request, *response);
  }

  grpc::Status ReconstructBatch(grpc::ServerContext* context, const v1::ReconstructBatchRequest* request,
                                v1::ReconstructBatchResponse* response) override {
    note_routing_header("ReconstructBatch", *context);
    for (const auto& item : request->items()) answer_item(item, *response->add_items());
    return grpc::Status::OK;
  }

  grpc::Status ReconstructProgressive(grpc::ServerContext* context,
                                      const v1::ReconstructProgressiveRequest* request,
                                      grpc::ServerWriter<v1::ReconstructResponse>* writer) override {
    note_routing_header("ReconstructProgressive", *context);
    for (const auto rank : request->ranks()) {
      v1::ReconstructRequest item;
      item.set_id(request->id());
      item.set_rank(rank);
      item.set_format(request->format());
      v1::ReconstructResponse response;
      if (const grpc::Status status = reconstruct(item, response); !status.ok()) return status;
      if (!writer->Write(response)) break;
    }
    return grpc::Status::OK;
  }

  grpc::Status ReconstructStream(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::ReconstructStreamResponse, v1::ReconstructRequest>* stream) override {
    note_routing_header("ReconstructStream", *context);
    v1::ReconstructRequest request;
    while (stream->Read(&request)) {
      v1::ReconstructStreamResponse response;
      answer_item(request, response);
      if (!stream->Write(response)) break;
    }
    return grpc::Status::OK;
  }

  grpc::Status Compress(grpc::ServerContext*, const v1::CompressRequest* request,
                        v1::CompressResponse* response) override {
    v1::Shape shape;
    if (!parse_shape(request->image().encoded(), shape)) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "cannot decode the image"};
    }
    const std::uint32_t rank = request->rank();
    if (rank == 0 || rank > kFullRank) return {grpc::StatusCode::INVALID_ARGUMENT, "rank out of range"};
    *response->mutable_shape() = shape;
    response->set_rank(rank);
    response->set_format(request->format());
    response->set_pixels(pixels(shape, rank, request->format(), "compressed", request->jpeg_quality()));
    return grpc::Status::OK;
  }

  grpc::Status GetImage(grpc::ServerContext* context, const v1::GetImageRequest* request,
                        v1::GetImageResponse* response) override {
    note_routing_header("GetImage", *context);
    const std::scoped_lock lock(mutex_);
    const auto found = images_.find(request->id());
    if (found == images_.end()) return {grpc::StatusCode::NOT_FOUND, "no image '" + request->id() + "'"};
    fill_info(found->first, found->second, *response->mutable_info());
    if (request->include_singular_values()) {
      for (std::uint32_t c = 0; c < found->second.shape.channels(); ++c) {
        auto* spectrum = response->add_singular_values();
        for (std::uint32_t k = found->second.rank; k > 0; --k) spectrum->add_values(static_cast<float>(k));
      }
    }
    return grpc::Status::OK;
  }

  // Pages of two (whatever the client asks), so that the CLI must follow next_page_token.
  grpc::Status ListImages(grpc::ServerContext* context, const v1::ListImagesRequest* request,
                          v1::ListImagesResponse* response) override {
    note_routing_header("ListImages", *context);
    constexpr int kPageSize = 2;
    const std::scoped_lock lock(mutex_);
    for (auto it = images_.upper_bound(request->page_token()); it != images_.end(); ++it) {
      if (response->images_size() == kPageSize) {
        response->set_next_page_token(response->images(kPageSize - 1).id());
        break;
      }
      fill_info(it->first, it->second, *response->add_images());
    }
    response->set_bytes_resident(1000 * images_.size());
    response->set_budget_bytes(1 << 30);
    return grpc::Status::OK;
  }

  grpc::Status DeleteImage(grpc::ServerContext* context, const v1::DeleteImageRequest* request,
                           v1::DeleteImageResponse* response) override {
    note_routing_header("DeleteImage", *context);
    const std::scoped_lock lock(mutex_);
    if (images_.erase(request->id()) == 0) return {grpc::StatusCode::NOT_FOUND, "no image '" + request->id() + "'"};
    response->set_bytes_freed(1000);
    return grpc::Status::OK;
  }

  grpc::Status GetServerInfo(grpc::ServerContext*, const v1::GetServerInfoRequest*,
                             v1::GetServerInfoResponse* response) override {
    response->set_version("fake");
    response->set_backend("cpu");
    response->set_memory_budget_bytes(uint64_t{1} << 40);  // a 64-bit value
    response->set_started_unix_ms(-5);
    return grpc::Status::OK;
  }

  grpc::Status Echo(grpc::ServerContext*, const v1::EchoRequest* request, v1::EchoResponse* response) override {
    ++echo_calls_;
    std::string payload = request->payload().substr(0, request->response_bytes());
    payload.resize(request->response_bytes(), '\0');
    response->set_payload(std::move(payload));
    return grpc::Status::OK;
  }

  [[nodiscard]] std::uint64_t echo_calls() const { return echo_calls_.load(); }

  // The routing header of the last call of `method` ("Reconstruct"); nullopt when that call had
  // none or no call came.
  [[nodiscard]] std::optional<std::string> routing_header(const std::string& method) const {
    const std::scoped_lock lock(mutex_);
    const auto found = routing_headers_.find(method);
    return found == routing_headers_.end() ? std::nullopt : found->second;
  }

  [[nodiscard]] std::size_t image_count() const {
    const std::scoped_lock lock(mutex_);
    return images_.size();
  }

 private:
  struct Stored {
    v1::Shape shape;
    std::uint32_t rank = 0;
  };

  static bool parse_shape(const std::string& text, v1::Shape& shape) {
    unsigned width = 0, height = 0, channels = 0;
    char tail = 0;
    if (std::sscanf(text.c_str(), "%ux%ux%u%c", &width, &height, &channels, &tail) != 3) return false;
    if (width == 0 || height == 0 || (channels != 1 && channels != 3 && channels != 4)) return false;
    shape.set_width(width);
    shape.set_height(height);
    shape.set_channels(channels);
    return true;
  }

  // Encoded formats answer a text that says what was asked: "PNG:id:rank", "JPEG:id:rank:qQUALITY".
  static std::string pixels(const v1::Shape& shape, std::uint32_t rank, v1::OutputFormat format,
                            const std::string& id, std::uint32_t jpeg_quality) {
    const std::size_t values = std::size_t{shape.width()} * shape.height() * shape.channels();
    switch (format) {
      case v1::OUTPUT_FORMAT_PNG: return "PNG:" + id + ":" + std::to_string(rank);
      case v1::OUTPUT_FORMAT_JPEG:
        return "JPEG:" + id + ":" + std::to_string(rank) + ":q" + std::to_string(jpeg_quality);
      case v1::OUTPUT_FORMAT_RAW_F32: return std::string(values * sizeof(float), '\0');
      default: return std::string(values, static_cast<char>(rank));
    }
  }

  static void fill_info(const std::string& id, const Stored& stored, v1::ImageInfo& info) {
    info.set_id(id);
    *info.mutable_shape() = stored.shape;
    info.set_rank_kept(stored.rank);
    info.set_bytes_resident(1000);
    info.set_state(v1::IMAGE_STATE_RESIDENT);
  }

  void note_routing_header(const std::string& method, const grpc::ServerContext& context) {
    std::optional<std::string> value;
    const auto& metadata = context.client_metadata();
    if (const auto found = metadata.find(std::string(kImageIdHeader)); found != metadata.end()) {
      value.emplace(found->second.data(), found->second.size());
    }
    const std::scoped_lock lock(mutex_);
    routing_headers_[method] = std::move(value);
  }

  void answer_item(const v1::ReconstructRequest& request, v1::ReconstructStreamResponse& response) {
    const grpc::Status status = reconstruct(request, *response.mutable_result());
    response.mutable_status()->set_code(static_cast<int>(status.error_code()));
    response.mutable_status()->set_message(status.error_message());
    if (!status.ok()) response.clear_result();
  }

  grpc::Status reconstruct(const v1::ReconstructRequest& request, v1::ReconstructResponse& response) {
    Stored stored;
    {
      const std::scoped_lock lock(mutex_);
      const auto found = images_.find(request.id());
      if (found == images_.end()) return {grpc::StatusCode::NOT_FOUND, "no image '" + request.id() + "'"};
      stored = found->second;
    }
    std::uint32_t rank = request.rank();
    if (request.rank_choice_case() == v1::ReconstructRequest::kEnergyFraction) rank = stored.rank;
    if (rank == 0 || rank > stored.rank) return {grpc::StatusCode::INVALID_ARGUMENT, "rank out of range"};
    response.set_id(request.id());
    *response.mutable_shape() = stored.shape;
    response.set_rank(rank);
    response.set_relative_error(1.0 - static_cast<double>(rank) / kFullRank);
    response.set_format(request.format());
    response.set_pixels(pixels(stored.shape, rank, request.format(), request.id(), request.jpeg_quality()));
    return grpc::Status::OK;
  }

  std::atomic<std::uint64_t> echo_calls_{0};
  mutable std::mutex mutex_;
  std::map<std::string, Stored> images_;  // Guarded by mutex_.
  std::map<std::string, std::optional<std::string>> routing_headers_;  // Guarded by mutex_.
};

// The fake on a free loopback port, with the standard health service, for one test.
class FakeServer {
 public:
  FakeServer() {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~FakeServer() { server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5)); }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] FakeSvdServe& service() { return service_; }
  [[nodiscard]] grpc::Server& server() { return *server_; }

 private:
  FakeSvdServe service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace svdserve::testing
