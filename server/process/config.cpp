#include "server/process/config.hpp"

#include <arpa/inet.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "kernels/errors.hpp"
#include "server/auth/token_file.hpp"
#include "server/process/gpu_devices.hpp"
#include "server/process/listen_address.hpp"
#include "server/process/logging.hpp"
#include "server/process/pem_file.hpp"
#include "server/repository/redis_address.hpp"
#include "server/repository/redis_repository.hpp"
#include "server/runtime/load_roots.hpp"

namespace svdserve {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

bool is_ip_address(const std::string& text) {
  in6_addr address{};
  return inet_pton(AF_INET, text.c_str(), &address) == 1 ||
         inet_pton(AF_INET6, text.c_str(), &address) == 1;
}

// Where text-format parsing first failed and what kind of failure it was, but not the parser's
// message: that quotes the text it choked on, and the file may be no config at all (--config
// /etc/shadow must not print a password hash).
class FirstErrorPosition : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (found_) return;
    found_ = true;
    const auto mentions = [&](const char* text) { return message.find(text) != std::string::npos; };
    const char* kind = mentions("has no field named")          ? "an unknown field"
                       : mentions("Unknown enumeration value") ? "an unknown enum value"
                                                               : "text it cannot parse";
    description_ = std::string(kind) + " at line " + std::to_string(line + 1) + ", column " +
                   std::to_string(column + 1);
  }
  [[nodiscard]] const std::string& description() const noexcept { return description_; }

 private:
  bool found_ = false;
  std::string description_ = "text it cannot parse";
};

// The TLS fields: complete, and every file named readable and of the right kind, so that a
// mistake stops the start instead of failing each handshake.
void validate_tls(const v1::ServerConfig& c, std::vector<std::string>& problems) {
  const bool cert = !c.tls_cert_file().empty();
  const bool key = !c.tls_key_file().empty();
  if (cert != key) {
    problems.push_back("tls_cert_file and tls_key_file must be set together (TLS needs both)");
  }
  if (!c.tls_client_ca_file().empty() && !(cert && key)) {
    problems.push_back("tls_client_ca_file needs tls_cert_file and tls_key_file (mutual TLS is "
                       "TLS first)");
  }
  constexpr uint32_t kMillisecondsPerSecond = 1000;
  constexpr uint32_t kMaxReloadIntervalMs = 24 * 3600 * kMillisecondsPerSecond;
  if (c.tls_reload_interval_ms() % kMillisecondsPerSecond != 0 ||
      c.tls_reload_interval_ms() > kMaxReloadIntervalMs) {
    problems.push_back("tls_reload_interval_ms must be whole seconds, 1000..86400000 (gRPC's "
                       "file watcher counts seconds), got " +
                       std::to_string(c.tls_reload_interval_ms()));
  }
  const auto check_file = [&](const char* field, const std::string& path, PemContent content) {
    if (path.empty()) return;
    if (const auto problem = pem_file_problem(path, content)) {
      problems.push_back(std::string(field) + " '" + path + "' " + *problem);
    }
  };
  check_file("tls_cert_file", c.tls_cert_file(), PemContent::certificate);
  check_file("tls_key_file", c.tls_key_file(), PemContent::private_key);
  check_file("tls_client_ca_file", c.tls_client_ca_file(), PemContent::certificate);
}

// The Redis repository's fields (60-65): an address both the config and hiredis accept, bounds
// on the pool and the timeout, and a password file read now so that a bad one stops the start.
void validate_redis(const v1::ServerConfig& c, std::vector<std::string>& problems) {
  constexpr uint32_t kMaxRedisPoolSize = 64;
  constexpr uint32_t kMaxRedisTimeoutMs = 60'000;
  if (!parse_redis_address(c.redis_address())) {
    problems.push_back("redis_address must be host:port (\"[v6]:port\" for IPv6) or "
                       "unix:/absolute/path, got '" + c.redis_address() + "'");
  }
  if (c.redis_pool_size() < 1 || c.redis_pool_size() > kMaxRedisPoolSize) {
    problems.push_back("redis_pool_size must be 1..64, got " + std::to_string(c.redis_pool_size()));
  }
  if (c.redis_timeout_ms() > kMaxRedisTimeoutMs) {
    problems.push_back("redis_timeout_ms must be at most 60000 (a call waits up to twice it), got " +
                       std::to_string(c.redis_timeout_ms()));
  }
  if (!c.redis_password_file().empty()) {
    try {
      (void)read_redis_password(c.redis_password_file());
    } catch (const Error& e) {
      problems.push_back(e.what());
    }
  }
}

}  // namespace

v1::ServerConfig read_config_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw InvalidArgument("cannot read config file '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  v1::ServerConfig config;
  google::protobuf::TextFormat::Parser parser;
  FirstErrorPosition error;
  parser.RecordErrorsTo(&error);
  if (!parser.ParseFromString(text.str(), &config)) {
    throw InvalidArgument("config file '" + path +
                          "' is not a valid svdserve.v1.ServerConfig in protobuf text format: " +
                          error.description() +
                          " (config/svdserve.textproto shows every field)");
  }
  return config;
}

void apply_defaults(v1::ServerConfig& c) {
  const uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  if (c.listen_address().empty()) c.set_listen_address("0.0.0.0:50051");
  if (c.loader_threads() == 0) c.set_loader_threads(cores);  // decoding is CPU-bound per image
  if (c.encoder_threads() == 0) c.set_encoder_threads(cores);  // so is encoding
  if (c.worker_threads() == 0) c.set_worker_threads(cores);
  if (c.cpu_compute_threads() == 0) c.set_cpu_compute_threads(cores);
  if (c.queue_capacity() == 0) c.set_queue_capacity(256);
  if (c.max_batch_size() == 0) c.set_max_batch_size(16);
  if (!c.has_max_queue_delay_us()) c.set_max_queue_delay_us(100);  // 0 is a valid choice
  if (!c.has_decompose_queue_delay_us()) c.set_decompose_queue_delay_us(2000);
  if (c.default_max_rank() == 0) c.set_default_max_rank(256);
  if (c.max_rank() == 0) c.set_max_rank(4096);
  if (c.max_image_width() == 0) c.set_max_image_width(8192);
  if (c.max_image_height() == 0) c.set_max_image_height(8192);
  if (c.max_image_bytes() == 0) c.set_max_image_bytes(60 * kMiB);
  if (c.max_message_bytes() == 0) c.set_max_message_bytes(64 * kMiB);
  if (c.max_batch_items() == 0) c.set_max_batch_items(256);
  if (!c.has_max_compute_ms()) c.set_max_compute_ms(60'000);  // 0 is a valid choice: no limit
  if (c.host_buffer_pool_bytes() == 0) c.set_host_buffer_pool_bytes(256 * kMiB);
  if (c.drain_timeout_ms() == 0) c.set_drain_timeout_ms(5000);  // docker stop waits 10 s
  if (!c.has_lame_duck_ms()) c.set_lame_duck_ms(1000);
  if (c.grpc_memory_quota_bytes() == 0) c.set_grpc_memory_quota_bytes(1024 * kMiB);
  if (c.max_concurrent_streams() == 0) c.set_max_concurrent_streams(100);
  if (c.max_connection_idle_ms() == 0) c.set_max_connection_idle_ms(300'000);
  if (c.keepalive_time_ms() == 0) c.set_keepalive_time_ms(60'000);
  if (c.keepalive_timeout_ms() == 0) c.set_keepalive_timeout_ms(20'000);
  if (c.min_client_ping_interval_ms() == 0) c.set_min_client_ping_interval_ms(10'000);
  if (c.log_level().empty()) c.set_log_level("info");
  if (c.gpu_streams() == 0) c.set_gpu_streams(4);
  if (c.gpu_memory_fraction() == 0) c.set_gpu_memory_fraction(0.8);
  if (c.gpu_devices().empty()) {
    c.set_gpu_devices(c.gpu_device() != 0 ? std::to_string(c.gpu_device()) : "all");
  }
  if (c.evicted_history() == 0) c.set_evicted_history(1024);
  if (c.metrics_host().empty()) c.set_metrics_host("127.0.0.1");  // this host only
  if (c.max_images() == 0) c.set_max_images(1'000'000);
  if (!c.has_reflection()) c.set_reflection(true);  // grpcurl and ghz work out of the box
  if (c.tls_reload_interval_ms() == 0) c.set_tls_reload_interval_ms(60'000);
  if (c.token_reload_interval_ms() == 0) c.set_token_reload_interval_ms(1000);
  // Persistence: an answered Decompose survives a crash unless the config says otherwise.
  if (c.durability() == v1::DURABILITY_UNSPECIFIED) c.set_durability(v1::DURABILITY_SYNC);
  if (c.data_dir().empty()) c.set_data_dir("svdserve-data");
  if (c.persist_queue_capacity() == 0) c.set_persist_queue_capacity(256);
  // Writers mostly wait in fsync: sync Decompose of 512x512 photos on an H200 ran 638 images/s
  // with 2, 816 with 8, 1,009 with 16 (bench/durability_bench.sh; the disk's fsync rate bounds it).
  if (c.persist_threads() == 0) c.set_persist_threads(16);
  // memory_budget_bytes stays 0 here: the backend decides (1 GiB on the CPU, a fraction of free
  // device memory on the GPU).

  // The Redis repository (fields 60-65).
  if (c.redis_address().empty()) c.set_redis_address("127.0.0.1:6379");
  if (c.redis_timeout_ms() == 0) c.set_redis_timeout_ms(2000);
  if (c.redis_pool_size() == 0) c.set_redis_pool_size(4);
  if (c.redis_key_prefix().empty()) c.set_redis_key_prefix("svdserve:factors:");
}

void validate(const v1::ServerConfig& c) {
  std::vector<std::string> problems;
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) problems.push_back(what);
  };
  const std::string& address = c.listen_address();
  if (!is_unix_socket(address)) {
    const std::optional<std::string_view> port = port_text(address);
    require(port.has_value(), "listen_address must be host:port, got '" + address + "'");
    // gRPC would take a port it cannot parse (99999) as "any free port": say so instead.
    require(!port || listen_port(address).has_value(),
            "listen_address port must be 0..65535, got '" + std::string(port.value_or("")) +
                "' in '" + address + "' (0: any free port)");
  }
  require(c.loader_threads() <= 256, "loader_threads must be 1..256");
  require(c.encoder_threads() <= 256, "encoder_threads must be 1..256");
  require(c.worker_threads() <= 256, "worker_threads must be 1..256");
  require(c.cpu_compute_threads() <= 1024, "cpu_compute_threads must be 1..1024");
  require(c.queue_capacity() <= 1'000'000, "queue_capacity must be 1..1000000");
  require(c.max_batch_size() <= 4096, "max_batch_size must be 1..4096");
  require(c.max_queue_delay_us() <= 1'000'000, "max_queue_delay_us must be at most 1000000");
  require(c.decompose_queue_delay_us() <= 1'000'000,
          "decompose_queue_delay_us must be at most 1000000");
  require(c.default_max_rank() <= c.max_rank(), "default_max_rank must not exceed max_rank");
  require(c.max_image_width() <= 65536 && c.max_image_height() <= 65536,
          "max_image_width/height must be at most 65536");
  require(c.max_image_bytes() <= c.max_message_bytes(),
          "max_image_bytes must not exceed max_message_bytes (the image travels in one message)");
  require(c.max_message_bytes() <= 2047 * kMiB, "max_message_bytes must be under 2 GiB (gRPC)");
  require(c.gpu_streams() <= 64, "gpu_streams must be 1..64");
  try {
    (void)parse_gpu_devices(c.gpu_devices());
  } catch (const InvalidArgument& e) {
    problems.push_back(e.what());
  }
  require(c.gpu_memory_fraction() > 0 && c.gpu_memory_fraction() <= 0.95,
          "gpu_memory_fraction must be in (0, 0.95]");
  require(c.metrics_port() <= 65535, "metrics_port must be 0..65535");
  require(is_ip_address(c.metrics_host()),
          "metrics_host must be an IP address such as 127.0.0.1, 0.0.0.0 or ::, got '" +
              c.metrics_host() + "'");
  require(c.max_batch_items() <= 100'000, "max_batch_items must be 1..100000");
  require(c.max_images() <= 100'000'000, "max_images must be 1..100000000");
  require(c.grpc_memory_quota_bytes() >= c.max_message_bytes(),
          "grpc_memory_quota_bytes must be at least max_message_bytes (gRPC reads a whole "
          "message into its memory)");
  require(c.max_concurrent_streams() <= 100'000, "max_concurrent_streams must be 1..100000");
  require(c.keepalive_timeout_ms() < c.keepalive_time_ms(),
          "keepalive_timeout_ms must be below keepalive_time_ms");
  constexpr uint32_t kMaxMs = 24 * 3600 * 1000;  // gRPC takes milliseconds as an int
  require(c.max_connection_idle_ms() <= kMaxMs && c.keepalive_time_ms() <= kMaxMs &&
              c.min_client_ping_interval_ms() <= kMaxMs,
          "max_connection_idle_ms, keepalive_time_ms and min_client_ping_interval_ms must be at "
          "most a day (86400000)");
  // A day: past it a limit does not bound anything a client would wait for.
  require(c.max_compute_ms() <= 86'400'000,
          "max_compute_ms must be at most 86400000 (0: no limit)");
  for (const std::string& root : c.load_roots()) {
    if (const auto problem = load_root_problem(root)) problems.push_back("load_roots: " + *problem);
  }
  validate_tls(c, problems);
  require(c.token_reload_interval_ms() <= kMaxMs,
          "token_reload_interval_ms must be at most a day (86400000)");
  require(c.persist_threads() <= 64, "persist_threads must be 1..64");
  require(c.persist_queue_capacity() <= 1'000'000, "persist_queue_capacity must be 1..1000000");
  require(c.persist_queue_capacity() >= c.persist_threads(),
          "persist_queue_capacity must be at least persist_threads (one place per thread)");
  try {
    set_log_level(c.log_level());
  } catch (const Error& e) {
    problems.push_back(e.what());
  }
  if (!c.token_file().empty()) {
    // Read now, so that a bad file stops the start; the message names a line, never its text.
    try {
      (void)read_token_file(c.token_file());
    } catch (const Error& e) {
      problems.push_back(e.what());
    }
  }

  validate_redis(c, problems);
  if (!problems.empty()) {
    std::string message = "invalid config: ";
    for (std::size_t i = 0; i < problems.size(); ++i) {
      message += (i ? "; " : "") + problems[i];
    }
    throw InvalidArgument(message);
  }
}

}  // namespace svdserve
