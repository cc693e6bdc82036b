#include "server/process/flags.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

// Refuses values above max rather than letting a narrowing cast wrap them around.
uint64_t parse_number(const std::string& flag, const std::string& value,
                      uint64_t max = std::numeric_limits<uint32_t>::max()) {
  uint64_t parsed = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (error != std::errc() || end != value.data() + value.size() || parsed > max) {
    throw InvalidArgument("--" + flag + " needs a non-negative integer (at most " +
                          std::to_string(max) + "), got '" + value + "'");
  }
  return parsed;
}

// A path on the command line is relative to the working folder; load roots are absolute.
std::string absolute_path(const std::string& path) {
  if (path.empty()) return path;  // validation says what is wrong with it
  std::string absolute = std::filesystem::absolute(path).string();
  while (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();
  return absolute;
}

bool parse_bool(const std::string& flag, const std::string& value) {
  if (value != "true" && value != "false") {
    throw InvalidArgument("--" + flag + " must be true or false, got '" + value + "'");
  }
  return value == "true";
}

using Setter = std::function<void(v1::ServerConfig&, const std::string& flag, const std::string&)>;

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> table = {
      {"listen", [](auto& c, auto&, auto& v) { c.set_listen_address(v); }},
      {"backend",
       [](auto& c, auto& f, auto& v) {
         if (v == "auto") c.set_backend(v1::BACKEND_KIND_AUTO);
         else if (v == "cpu") c.set_backend(v1::BACKEND_KIND_CPU);
         else if (v == "gpu") c.set_backend(v1::BACKEND_KIND_GPU);
         else throw InvalidArgument("--" + f + " must be auto, cpu or gpu, got '" + v + "'");
       }},
      {"workers", [](auto& c, auto& f, auto& v) { c.set_worker_threads(static_cast<uint32_t>(parse_number(f, v))); }},
      {"loaders", [](auto& c, auto& f, auto& v) { c.set_loader_threads(static_cast<uint32_t>(parse_number(f, v))); }},
      {"encoders", [](auto& c, auto& f, auto& v) { c.set_encoder_threads(static_cast<uint32_t>(parse_number(f, v))); }},
      {"cpu-compute-threads", [](auto& c, auto& f, auto& v) { c.set_cpu_compute_threads(static_cast<uint32_t>(parse_number(f, v))); }},
      {"max-batch-size", [](auto& c, auto& f, auto& v) { c.set_max_batch_size(static_cast<uint32_t>(parse_number(f, v))); }},
      {"max-queue-delay-us", [](auto& c, auto& f, auto& v) { c.set_max_queue_delay_us(static_cast<uint32_t>(parse_number(f, v))); }},
      {"decompose-queue-delay-us", [](auto& c, auto& f, auto& v) { c.set_decompose_queue_delay_us(static_cast<uint32_t>(parse_number(f, v))); }},
      {"queue-capacity", [](auto& c, auto& f, auto& v) { c.set_queue_capacity(static_cast<uint32_t>(parse_number(f, v))); }},
      {"memory-budget-mib", [](auto& c, auto& f, auto& v) { c.set_memory_budget_bytes(parse_number(f, v, std::numeric_limits<uint64_t>::max() >> 20) << 20); }},
      {"max-images", [](auto& c, auto& f, auto& v) { c.set_max_images(static_cast<uint32_t>(parse_number(f, v))); }},
      {"host-buffer-pool-mib", [](auto& c, auto& f, auto& v) { c.set_host_buffer_pool_bytes(parse_number(f, v, std::numeric_limits<uint64_t>::max() >> 20) << 20); }},
      {"log-level", [](auto& c, auto&, auto& v) { c.set_log_level(v); }},
      {"metrics-port", [](auto& c, auto& f, auto& v) { c.set_metrics_port(static_cast<uint32_t>(parse_number(f, v))); }},
      {"metrics-host", [](auto& c, auto&, auto& v) { c.set_metrics_host(v); }},
      {"gpu-streams", [](auto& c, auto& f, auto& v) { c.set_gpu_streams(static_cast<uint32_t>(parse_number(f, v))); }},
      {"gpu-devices", [](auto& c, auto&, auto& v) { c.set_gpu_devices(v); }},
      {"cpu-svd", [](auto& c, auto& f, auto& v) {
         if (v != "automatic" && v != "exact") {
           throw InvalidArgument("--" + f + " must be automatic or exact, got '" + v + "'");
         }
         c.set_cpu_svd(v == "exact" ? v1::CPU_SVD_EXACT : v1::CPU_SVD_AUTOMATIC);
       }},
      {"gpu-svd", [](auto& c, auto& f, auto& v) {
         if (v != "automatic" && v != "exact") {
           throw InvalidArgument("--" + f + " must be automatic or exact, got '" + v + "'");
         }
         c.set_gpu_svd(v == "exact" ? v1::GPU_SVD_EXACT : v1::GPU_SVD_AUTOMATIC);
       }},
      {"gpu-jpeg", [](auto& c, auto& f, auto& v) {
         if (v != "nvjpeg" && v != "off") {
           throw InvalidArgument("--" + f + " must be nvjpeg or off, got '" + v + "'");
         }
         c.set_gpu_jpeg(v == "off" ? v1::GPU_JPEG_OFF : v1::GPU_JPEG_NVJPEG);
       }},
      {"drain-timeout-ms", [](auto& c, auto& f, auto& v) { c.set_drain_timeout_ms(static_cast<uint32_t>(parse_number(f, v))); }},
      {"lame-duck-ms", [](auto& c, auto& f, auto& v) { c.set_lame_duck_ms(static_cast<uint32_t>(parse_number(f, v))); }},
      {"max-compute-ms", [](auto& c, auto& f, auto& v) { c.set_max_compute_ms(static_cast<uint32_t>(parse_number(f, v))); }},
      {"load-root", [](auto& c, auto&, auto& v) { c.add_load_roots(absolute_path(v)); }},
      {"reflection", [](auto& c, auto& f, auto& v) { c.set_reflection(parse_bool(f, v)); }},
      {"tls-cert", [](auto& c, auto&, auto& v) { c.set_tls_cert_file(v); }},
      {"tls-key", [](auto& c, auto&, auto& v) { c.set_tls_key_file(v); }},
      {"tls-client-ca", [](auto& c, auto&, auto& v) { c.set_tls_client_ca_file(v); }},
      {"tls-reload-interval-ms", [](auto& c, auto& f, auto& v) { c.set_tls_reload_interval_ms(static_cast<uint32_t>(parse_number(f, v))); }},
      {"token-file", [](auto& c, auto&, auto& v) { c.set_token_file(v); }},
      {"token-reload-interval-ms", [](auto& c, auto& f, auto& v) { c.set_token_reload_interval_ms(static_cast<uint32_t>(parse_number(f, v))); }},
      {"data-dir", [](auto& c, auto&, auto& v) { c.set_data_dir(v); }},
      {"address-file", [](auto& c, auto&, auto& v) { c.set_address_file(v); }},
      {"durability", [](auto& c, auto& f, auto& v) {
         if (v != "sync" && v != "async" && v != "none") {
           throw InvalidArgument("--" + f + " must be sync, async or none, got '" + v + "'");
         }
         c.set_durability(v == "sync" ? v1::DURABILITY_SYNC
                          : v == "async" ? v1::DURABILITY_ASYNC : v1::DURABILITY_NONE);
       }},
      {"persist-threads", [](auto& c, auto& f, auto& v) { c.set_persist_threads(static_cast<uint32_t>(parse_number(f, v))); }},
      {"redis-address", [](auto& c, auto&, auto& v) { c.set_redis_address(v); }},
      {"redis-password-file", [](auto& c, auto&, auto& v) { c.set_redis_password_file(v); }},
  };
  return table;
}

}  // namespace

CommandLine parse_command_line(int argc, char** argv) {
  CommandLine result;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") { result.help = true; continue; }
    if (arg == "--version") { result.version = true; continue; }
    if (arg.rfind("--", 0) != 0) throw InvalidArgument("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2);
    std::string value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else {
      if (i + 1 >= argc) throw InvalidArgument("--" + name + " needs a value");
      value = argv[++i];
    }
    if (name == "config") result.config_path = value;
    else if (name == "load-dir") result.load_dir = absolute_path(value);
    else if (setters().contains(name)) result.overrides.emplace_back(name, value);
    else throw InvalidArgument("unknown flag --" + name + " (see --help)");
  }
  return result;
}

void apply_overrides(const CommandLine& command_line, v1::ServerConfig& config) {
  for (const auto& [name, value] : command_line.overrides) setters().at(name)(config, name, value);
  // The folder loaded at start is one LoadDirectory may read: `--load-dir /data` just works.
  const auto& roots = config.load_roots();
  if (!command_line.load_dir.empty() &&
      std::find(roots.begin(), roots.end(), command_line.load_dir) == roots.end()) {
    config.add_load_roots(command_line.load_dir);
  }
}

std::string usage() {
  return R"(svdserve: SVD image decomposition and rank-k reconstruction over gRPC

usage: svdserve [--config FILE] [flags]

  --config FILE             ServerConfig in protobuf text format (see config/svdserve.textproto)
  --listen HOST:PORT        gRPC address (default 0.0.0.0:50051; port 0: any free port)
  --address-file FILE       once serving, write the address to connect to into FILE (removed
                            at exit): for health checks and for --listen HOST:0
  --backend auto|cpu|gpu    compute backend (default auto: the GPU when one is usable)
  --load-dir DIR            decompose every image under DIR at start (ids: relative paths);
                            DIR is a load root
  --load-root DIR           a folder LoadDirectory may read (repeatable; adds to the config's)
  --workers N               batch workers: batches running at once
  --loaders N               threads that read and decode input images
  --encoders N              threads that encode PNG and JPEG answers
  --cpu-compute-threads N   CPU backend: threads computing a batch's images
  --cpu-svd automatic|exact CPU decompose: randomized below full rank (fast) or sgesdd
  --max-batch-size N        images per batch
  --max-queue-delay-us N    how long a partial batch may wait for more images
  --decompose-queue-delay-us N  the same for Decompose/Compress batches (default 2000)
  --queue-capacity N        jobs per pipeline queue
  --max-compute-ms N        estimated compute one Decompose/Compress may take (default 60000;
                            0: no limit)
  --memory-budget-mib N     factor store budget
  --max-images N            images the factor store keeps at most
  --host-buffer-pool-mib N  recycled Reconstruct response memory (page-locked on the GPU)
  --gpu-devices all|0,1,... GPUs to shard images over (default all visible; budget per device)
  --gpu-streams N           CUDA streams (GPU backend, per device)
  --gpu-svd automatic|exact GPU decompose: randomized (fast) or Xgesvd (LAPACK accuracy)
  --gpu-jpeg nvjpeg|off     GPU backend: JPEGs decoded on the device, or by OpenCV
  --tls-cert FILE           TLS: the server's PEM certificate chain (with --tls-key)
  --tls-key FILE            TLS: its PEM private key
  --tls-client-ca FILE      mutual TLS: clients must present a certificate this CA signed
  --tls-reload-interval-ms N  how often the TLS files are read again (default 60000, whole
                            seconds): replaced certificates are used without a restart
  --metrics-port N          Prometheus /metrics port (0: off)
  --metrics-host IP         address /metrics binds (default 127.0.0.1; 0.0.0.0: every interface;
                            plain HTTP, so keep it on loopback or behind a proxy)
  --drain-timeout-ms N      shutdown limit, from the signal to the exit (default 5000)
  --lame-duck-ms N          after the signal, health NOT_SERVING but calls still answered
                            (default 1000, within the drain timeout; 0: none)
  --token-file FILE         bearer tokens, one a line: sha256:<hex> ROLE NAME [NAMESPACE]
                            (config/tokens.example); without it, no authentication
  --token-reload-interval-ms N  how often, at most, the token file is looked at for changes
                            (default 1000)
  --data-dir DIR            the folder factors are kept in (default ./svdserve-data)
  --durability MODE         sync (answer a Decompose once its factors are on disk; default),
                            async (write behind; a crash loses what was queued) or none
  --persist-threads N       threads writing factors to the repository (default 16)
  --redis-address ADDRESS   the Redis repository: host:port or unix:/path (default
                            127.0.0.1:6379; docs/REDIS.md)
  --redis-password-file FILE  its AUTH password, the file's first line (never logged)
  --log-level LEVEL         trace, debug, info, warn, error
  --reflection true|false   gRPC server reflection, for grpcurl and ghz (default true)
  --version, --help

Without TLS or a token file, a listener that other hosts can reach is logged as a warning at
start.
Flags override the config file. SIGINT/SIGTERM: health NOT_SERVING for the lame duck, then
in-flight work drains and svdserve exits 0 (4 when work still running at the drain timeout had
to be abandoned).
)";
}

}  // namespace svdserve
