#include "server/process/server.hpp"

#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "kernels/errors.hpp"
#include "server/runtime/unix_time.hpp"
#include "kernels/trace.hpp"
#include "server/process/backend_selection.hpp"
#include "server/process/exposure.hpp"
#include "server/process/listen_address.hpp"
#include "server/process/prometheus_text.hpp"
#include "server/process/reflection_option.hpp"
#include "server/process/repository_selection.hpp"
#include "server/process/server_credentials.hpp"
#include "server/runtime/device_snapshot.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

constexpr const char* kServiceName = "svdserve.v1.SvdServe";
// After the drain timeout: time for cancelled calls to end and threads to be joined before the
// shutdown gives up waiting for them.
constexpr std::chrono::milliseconds kExitMargin(1000);

PipelineOptions pipeline_options(const v1::ServerConfig& c) {
  PipelineOptions options;
  options.loader_threads = c.loader_threads();
  options.worker_threads = c.worker_threads();
  options.encoder_threads = c.encoder_threads();
  options.queue_capacity = c.queue_capacity();
  options.wait_when_full = c.full_queue_policy() == v1::FULL_QUEUE_POLICY_WAIT;
  options.batcher.max_batch_size = c.max_batch_size();
  options.batcher.max_queue_delay = std::chrono::microseconds(c.max_queue_delay_us());
  options.batcher.decompose_queue_delay = std::chrono::microseconds(c.decompose_queue_delay_us());
  options.image_limits = {c.max_image_width(), c.max_image_height(), c.max_image_bytes()};
  // Leave room for the response's other fields and gRPC framing.
  options.max_output_bytes = c.max_message_bytes() - 64 * 1024;
  options.host_buffer_pool_bytes = c.host_buffer_pool_bytes();
  options.max_compute = std::chrono::milliseconds(c.max_compute_ms());
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
  FactorStoreLimits store_limits;  // and the measured entry cost
  store_limits.device_budget_bytes = device_budget_bytes(config_, *backend_);
  store_limits.when_full = config_.full_store_policy() == v1::FULL_STORE_POLICY_REJECT
                               ? FullStoreAction::reject
                               : FullStoreAction::evict_lru;
  store_limits.evicted_history = config_.evicted_history();
  store_limits.max_images = config_.max_images();
  store_ = std::make_unique<FactorStore>(store_limits);
  const std::size_t budget = store_->budget_bytes();
  // A failed device's images leave memory; those the repository holds reload onto the other
  // devices when next used.
  backend_->on_device_failure([this](std::size_t device, const std::string& reason) {
    const std::size_t dropped = store_->drop_device(device);
    const std::vector<DeviceInfo> devices = backend_->devices();
    log().error("device_failed device={} ordinal={} images_dropped={} reason=\"{}\"", device,
                devices.at(device).ordinal, dropped, reason);
    if (std::none_of(devices.begin(), devices.end(),
                     [](const DeviceInfo& info) { return info.in_service; })) {
      log().error("no device is in service: health is NOT_SERVING; the server must restart");
      std::function<void()> lost;
      {
        std::lock_guard lock(serving_mutex_);
        if (!devices_lost_) lost = on_devices_lost_;  // once, however many devices go together
        devices_lost_ = true;
        if (health_) health_->set_serving(false);
      }
      if (lost) lost();
    }
  });
  cache_ = std::make_unique<FactorCache>(*store_, *backend_, make_repository(config_),
                                         factor_cache_options(config_));
  metrics_ = std::make_unique<MetricsSink>(service_metric_labels());
  pipeline_ = std::make_unique<Pipeline>(pipeline_options(config_), *backend_, *store_, *metrics_);
  // Half the compute queue; the other half stays for the other RPCs.
  stream_budget_ =
      std::make_unique<StreamBudget>(std::max<uint64_t>(1, config_.queue_capacity() / 2));
  // As much as the pool keeps: every answer not yet sent fits in recycled memory.
  unsent_bytes_ = std::make_unique<UnsentBytesBudget>(config_.host_buffer_pool_bytes());
  if (config_.metrics_port() != 0) {
    metrics_http_ = std::make_unique<MetricsHttpEndpoint>(
        config_.metrics_host(), static_cast<int>(config_.metrics_port()), [this] {
          const LiveValues live{pipeline_->decode_queue_depth(), pipeline_->compute_queue_depth(),
                                pipeline_->jobs_in_flight(),      store_->images_resident(),
                                store_->bytes_resident(),         store_->budget_bytes(),
                                store_->evictions(),              pipeline_->host_buffer_stats(),
                                stream_budget_->sample(),         unsent_bytes_->sample(),
                                backend_->metrics(),              cache_->counters(),
                                device_snapshots(*backend_, *store_),
                                static_cast<std::size_t>(config_.queue_capacity())};
          return prometheus_text(metrics_->totals(), live);
        });
  }
  if (!config_.token_file().empty()) {
    tokens_ = std::make_unique<TokenFileWatch>(
        config_.token_file(), std::chrono::milliseconds(config_.token_reload_interval_ms()));
  }
  authorizer_ = std::make_unique<Authorizer>(tokens_.get());
  service_ = std::make_unique<SvdService>(
      ServiceContext{config_, *backend_, *store_, *cache_, *pipeline_, *metrics_, *stream_budget_,
                     *unsent_bytes_, *authorizer_, now_unix_ms()});

  // Ours instead of gRPC's default health service, which holds Watch calls open through a drain.
  grpc::EnableDefaultHealthCheckService(false);
  health_ = std::make_unique<HealthService>(std::vector<std::string>{kServiceName});
  grpc::ServerBuilder builder;
  builder.SetOption(std::make_unique<ReflectionOption>(config_.reflection()));
  builder.AddListeningPort(config_.listen_address(), server_credentials(config_), &port_);
  // gRPC sets SO_REUSEPORT by default: a second server would bind the same port and take half
  // of the new connections. It must fail to start instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes()));
  builder.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes()));
  apply_transport_limits(config_, builder);
  builder.RegisterService(service_.get());
  builder.RegisterService(health_.get());
  grpc_server_ = builder.BuildAndStart();
  if (!grpc_server_ || port_ == 0) {
    throw Unavailable(explain_listen_failure(config_.listen_address()));
  }
  if (const auto requested = listen_port(config_.listen_address());
      requested && *requested != 0 && *requested != port_) {
    throw Unavailable("asked to listen on port " + std::to_string(*requested) + ", got " +
                      std::to_string(port_));
  }
  set_serving(false);  // until startup work (e.g. --load-dir) is done
  const bool tls = tls_enabled(config_);
  log().info("listening address={} port={} tls={} authentication={} metrics_port={} backend={} "
             "device=\"{}\" budget_bytes={} workers={} loaders={} encoders={} "
             "cpu_compute_threads={} max_batch_size={} max_queue_delay_us={} reflection={} "
             "load_roots={}",
             config_.listen_address(), port_,
             !tls ? "off" : config_.tls_client_ca_file().empty() ? "on" : "mutual",
             authorizer_->enabled() ? "tokens" : "off", metrics_port(), backend_->name(),
             backend_->device_description(), budget, config_.worker_threads(),
             config_.loader_threads(), config_.encoder_threads(), config_.cpu_compute_threads(),
             config_.max_batch_size(), config_.max_queue_delay_us(), config_.reflection(),
             config_.load_roots_size());
  const ListenerGuards guards{.tls = tls, .authentication = authorizer_->enabled()};
  for (const std::string& warning : exposure_warnings(config_, guards)) log().warn("{}", warning);
  // Before health says SERVING: what the repository holds is listed, the newest of it resident.
  const auto open_started = std::chrono::steady_clock::now();
  const RepositoryIndex index = cache_->open();
  log().info("repository={} durability={} images={} skipped={} loaded={} open_ms={}",
             cache_->describe(), v1::Durability_Name(config_.durability()), index.images,
             index.skipped, index.loaded,
             std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - open_started)
                 .count());
}

Server::~Server() {
  shutdown();
  backend_->on_device_failure({});  // the store goes before the backend
}

void Server::set_serving(bool serving) {
  std::lock_guard lock(serving_mutex_);
  if (serving && (stopping_ || devices_lost_)) return;
  health_->set_serving(serving);
}

void Server::on_devices_lost(std::function<void()> handler) {
  bool already_lost = false;
  {
    std::lock_guard lock(serving_mutex_);
    on_devices_lost_ = handler;
    already_lost = devices_lost_;
  }
  if (already_lost && handler) handler();  // lost while the server was starting
}

bool Server::devices_lost() const {
  std::lock_guard lock(serving_mutex_);
  return devices_lost_;
}

bool Server::stopping() const {
  std::lock_guard lock(serving_mutex_);
  return stopping_;
}

uint32_t Server::load_directory(const std::string& path) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes()));
  auto stub = v1::SvdServe::NewStub(grpc_server_->InProcessChannel(arguments));
  grpc::ClientContext context;
  // The server's own call: an admin without a namespace, whatever the token file holds.
  context.AddMetadata("authorization", "Bearer " + authorizer_->process_token());
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

void Server::start_stopping() {
  {
    std::lock_guard lock(serving_mutex_);
    stopping_ = true;
  }
  std::call_once(stop_once_, [this] {
    stop_started_ = std::chrono::steady_clock::now();
    std::packaged_task<void()> stop([this] { stop_in_order(); });
    stopped_ = stop.get_future().share();
    stopper_ = std::jthread(std::move(stop));
  });
}

bool Server::shutdown_within_drain_timeout() {
  start_stopping();
  const auto give_up =
      stop_started_ + std::chrono::milliseconds(config_.drain_timeout_ms()) + kExitMargin;
  return stopped_.wait_until(give_up) == std::future_status::ready;
}

void Server::shutdown() {
  start_stopping();
  stopped_.wait();
}

void Server::stop_in_order() noexcept {
  trace::name_current_thread("svd-shutdown");
  try {
    const auto drain_timeout = std::chrono::milliseconds(config_.drain_timeout_ms());
    const auto lame_duck =
        std::min(std::chrono::milliseconds(config_.lame_duck_ms()), drain_timeout);
    log().info("shutdown: health NOT_SERVING, still serving lame_duck_ms={}; drain_timeout_ms={}",
               lame_duck.count(), drain_timeout.count());
    set_serving(false);
    // Load balancers and clients that watch health move away while calls are still answered.
    std::this_thread::sleep_until(stop_started_ + lame_duck);
    log().info("shutdown: refusing new calls; draining");
    service_->stop_accepting();  // open ReconstructStreams end once their answers are written
    health_->shutdown();         // Watch calls end
    // Stops listening, waits for the calls in flight, cancels what is left at the deadline.
    const auto left = stop_started_ + drain_timeout - std::chrono::steady_clock::now();
    grpc_server_->Shutdown(std::chrono::system_clock::now() +
                           std::chrono::duration_cast<std::chrono::system_clock::duration>(left));
    pipeline_->shutdown();
    grpc_server_->Wait();
    cache_->close();  // writes queued behind answered Decomposes (async durability)
    const HostBufferPoolStats buffers = pipeline_->host_buffer_stats();
    log().info("shutdown: done images_resident={} host_buffers_in_use_bytes={} "
               "host_buffer_reuses={} host_buffer_allocations={} host_buffer_fallbacks={}",
               store_->images_resident(), buffers.in_use_bytes, buffers.reuses,
               buffers.allocations, buffers.fallbacks);
  } catch (const std::exception& e) {
    log().error("shutdown failed: {}", e.what());
  }
}

}  // namespace svdserve
