#include "server/process/server.hpp"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>

#include <algorithm>
#include <chrono>

#include "grpc/health/v1/health.pb.h"
#include "kernels/errors.hpp"
#include "server/process/backend_selection.hpp"
#include "server/process/prometheus_text.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

constexpr const char* kServiceName = "svdserve.v1.SvdServe";

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

PipelineOptions pipeline_options(const v1::ServerConfig& c) {
  PipelineOptions options;
  options.loader_threads = c.loader_threads();
  options.worker_threads = c.worker_threads();
  options.encoder_threads = c.encoder_threads();
  options.queue_capacity = c.queue_capacity();
  options.wait_when_full = c.full_queue_policy() == v1::FULL_QUEUE_POLICY_WAIT;
  options.batcher.max_batch_size = c.max_batch_size();
  options.batcher.max_queue_delay = std::chrono::microseconds(c.max_queue_delay_us());
  options.image_limits = {c.max_image_width(), c.max_image_height(), c.max_image_bytes()};
  // Leave room for the response's other fields and gRPC framing.
  options.max_output_bytes = c.max_message_bytes() - 64 * 1024;
  options.host_buffer_pool_bytes = c.host_buffer_pool_bytes();
  return options;
}

// What gRPC itself may hold, and for how long a connection may sit: the transport's share of
// every request's bound (the service bounds what it holds for each call).
void apply_transport_limits(const v1::ServerConfig& c, grpc::ServerBuilder& builder) {
  grpc::ResourceQuota quota("svdserve");
  quota.Resize(c.grpc_memory_quota_bytes());
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(c.max_concurrent_streams()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(c.max_connection_idle_ms()));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(c.keepalive_time_ms()));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             static_cast<int>(c.keepalive_timeout_ms()));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             static_cast<int>(c.min_client_ping_interval_ms()));
}

}  // namespace

Server::Server(v1::ServerConfig config) : config_(std::move(config)) {
  backend_ = make_backend(config_);
  const std::size_t budget = memory_budget_bytes(config_, *backend_);
  FactorStoreLimits store_limits;  // and the measured entry cost
  store_limits.budget_bytes = budget;
  store_limits.when_full = config_.full_store_policy() == v1::FULL_STORE_POLICY_REJECT
                               ? FullStoreAction::reject
                               : FullStoreAction::evict_lru;
  store_limits.evicted_history = config_.evicted_history();
  store_limits.max_images = config_.max_images();
  store_ = std::make_unique<FactorStore>(store_limits);
  metrics_ = std::make_unique<MetricsSink>(service_metric_labels());
  pipeline_ = std::make_unique<Pipeline>(pipeline_options(config_), *backend_, *store_, *metrics_);
  // Half the compute queue; the other half stays for the other RPCs.
  stream_budget_ =
      std::make_unique<StreamBudget>(std::max<uint64_t>(1, config_.queue_capacity() / 2));
  // As much as the pool keeps: every answer not yet sent fits in recycled memory.
  unsent_bytes_ = std::make_unique<UnsentBytesBudget>(config_.host_buffer_pool_bytes());
  if (config_.metrics_port() != 0) {
    metrics_http_ = std::make_unique<MetricsHttpEndpoint>(
        static_cast<int>(config_.metrics_port()), [this] {
          const LiveValues live{pipeline_->decode_queue_depth(), pipeline_->compute_queue_depth(),
                                pipeline_->jobs_in_flight(),      store_->images_resident(),
                                store_->bytes_resident(),         store_->budget_bytes(),
                                store_->evictions(),              pipeline_->host_buffer_stats(),
                                stream_budget_->sample(),         unsent_bytes_->sample(),
                                backend_->metrics()};
          return prometheus_text(metrics_->totals(), live);
        });
  }
  service_ = std::make_unique<SvdService>(
      ServiceContext{config_, *backend_, *store_, *pipeline_, *metrics_, *stream_budget_,
                     *unsent_bytes_, now_unix_ms()});

  grpc::EnableDefaultHealthCheckService(true);
  // gRPC's health service has no descriptors of its own: linking ours (by naming one) lets
  // reflection describe the service it lists, so that grpcurl and ghz can call it.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config_.listen_address(), grpc::InsecureServerCredentials(), &port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes()));
  builder.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes()));
  apply_transport_limits(config_, builder);
  builder.RegisterService(service_.get());
  grpc_server_ = builder.BuildAndStart();
  if (!grpc_server_ || port_ == 0) {
    throw Unavailable("could not listen on " + config_.listen_address() +
                      " (address in use or not available?)");
  }
  set_serving(false);  // until startup work (e.g. --load-dir) is done
  log().info("listening address={} port={} metrics_port={} backend={} device=\"{}\" budget_bytes={} "
             "workers={} loaders={} encoders={} cpu_compute_threads={} max_batch_size={} "
             "max_queue_delay_us={}",
             config_.listen_address(), port_, metrics_port(), backend_->name(),
             backend_->device_description(), budget, config_.worker_threads(),
             config_.loader_threads(), config_.encoder_threads(), config_.cpu_compute_threads(),
             config_.max_batch_size(), config_.max_queue_delay_us());
}

Server::~Server() { shutdown(); }

void Server::set_serving(bool serving) {
  auto* health = grpc_server_->GetHealthCheckService();
  health->SetServingStatus(serving);
  health->SetServingStatus(kServiceName, serving);
}

uint32_t Server::load_directory(const std::string& path) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes()));
  auto stub = v1::SvdServe::NewStub(grpc_server_->InProcessChannel(arguments));
  grpc::ClientContext context;
  v1::LoadDirectoryRequest request;
  request.set_path(path);
  request.set_recursive(true);
  v1::LoadDirectoryResponse response;
  const grpc::Status status = stub->LoadDirectory(&context, request, &response);
  if (!status.ok()) {
    throw InvalidArgument("--load-dir " + path + ": " + status.error_message());
  }
  for (const auto& result : response.results()) {
    if (result.status().code() != 0) {
      log().warn("load_directory file={} error=\"{}\"", result.path(), result.status().message());
    }
  }
  return response.loaded();
}

void Server::shutdown() {
  std::call_once(shutdown_once_, [this] {
    log().info("shutdown: draining timeout_ms={}", config_.drain_timeout_ms());
    set_serving(false);
    service_->stop_accepting();
    const auto deadline =
        std::chrono::system_clock::now() + std::chrono::milliseconds(config_.drain_timeout_ms());
    grpc_server_->Shutdown(deadline);  // waits for in-flight RPCs; cancels them at the deadline
    pipeline_->shutdown();
    grpc_server_->Wait();
    const HostBufferPoolStats buffers = pipeline_->host_buffer_stats();
    log().info("shutdown: done images_resident={} host_buffers_in_use_bytes={} "
               "host_buffer_reuses={} host_buffer_allocations={} host_buffer_fallbacks={}",
               store_->images_resident(), buffers.in_use_bytes, buffers.reuses,
               buffers.allocations, buffers.fallbacks);
  });
}

}  // namespace svdserve
