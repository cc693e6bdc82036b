#include "server/process/flags.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

// argv as main() gets it, program name first.
CommandLine parse(std::initializer_list<std::string> args) {
  std::vector<std::string> storage{"svdserve"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  return parse_command_line(static_cast<int>(storage.size()), argv.data());
}

template <typename F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected InvalidArgument";
  return {};
}

TEST(Flags, NoArgumentsMeansDefaults) {
  const CommandLine command_line = parse({});
  EXPECT_TRUE(command_line.config_path.empty());
  EXPECT_TRUE(command_line.load_dir.empty());
  EXPECT_FALSE(command_line.help);
  EXPECT_FALSE(command_line.version);
  EXPECT_TRUE(command_line.overrides.empty());
}

TEST(Flags, OverridesReachTheConfig) {
  const CommandLine command_line =
      parse({"--config", "/etc/svdserve.textproto", "--load-dir=/data", "--listen",
             "127.0.0.1:6000", "--backend=cpu", "--workers", "8", "--loaders=3", "--encoders", "6", "--cpu-compute-threads", "5",
             "--max-batch-size", "32", "--max-queue-delay-us", "250", "--queue-capacity", "64",
             "--memory-budget-mib", "2", "--max-images", "5000", "--host-buffer-pool-mib", "3", "--log-level", "debug", "--metrics-port", "9100", "--metrics-host", "0.0.0.0",
             "--cpu-svd", "exact", "--gpu-streams", "2", "--gpu-svd", "exact",
             "--gpu-jpeg", "off", "--drain-timeout-ms", "1500", "--lame-duck-ms", "0",
             "--max-compute-ms", "0",
             "--tls-cert", "/etc/tls/server.crt", "--tls-key=/etc/tls/server.key",
             "--tls-client-ca", "/etc/tls/ca.crt", "--tls-reload-interval-ms", "5000",
             "--token-file", "/etc/svdserve/tokens", "--token-reload-interval-ms=250"});
  EXPECT_EQ(command_line.config_path, "/etc/svdserve.textproto");
  EXPECT_EQ(command_line.load_dir, "/data");

  v1::ServerConfig config;
  config.set_max_rank(77);  // not a flag: stays
  apply_overrides(command_line, config);
  EXPECT_EQ(config.listen_address(), "127.0.0.1:6000");
  EXPECT_EQ(config.backend(), v1::BACKEND_KIND_CPU);
  EXPECT_EQ(config.worker_threads(), 8u);
  EXPECT_EQ(config.loader_threads(), 3u);
  EXPECT_EQ(config.encoder_threads(), 6u);
  EXPECT_EQ(config.cpu_compute_threads(), 5u);
  EXPECT_EQ(config.max_batch_size(), 32u);
  EXPECT_EQ(config.max_queue_delay_us(), 250u);
  EXPECT_EQ(config.queue_capacity(), 64u);
  EXPECT_EQ(config.memory_budget_bytes(), 2u << 20);
  EXPECT_EQ(config.max_images(), 5000u);
  EXPECT_EQ(config.host_buffer_pool_bytes(), 3u << 20);
  EXPECT_EQ(config.log_level(), "debug");
  EXPECT_EQ(config.metrics_port(), 9100u);
  EXPECT_EQ(config.metrics_host(), "0.0.0.0");
  EXPECT_EQ(config.gpu_streams(), 2u);
  EXPECT_EQ(config.cpu_svd(), v1::CPU_SVD_EXACT);
  EXPECT_EQ(config.gpu_svd(), v1::GPU_SVD_EXACT);
  EXPECT_EQ(config.drain_timeout_ms(), 1500u);
  EXPECT_TRUE(config.has_lame_duck_ms());
  EXPECT_EQ(config.lame_duck_ms(), 0u);
  EXPECT_TRUE(config.has_max_compute_ms());
  EXPECT_EQ(config.max_compute_ms(), 0u);
  EXPECT_EQ(config.tls_cert_file(), "/etc/tls/server.crt");
  EXPECT_EQ(config.tls_key_file(), "/etc/tls/server.key");
  EXPECT_EQ(config.tls_client_ca_file(), "/etc/tls/ca.crt");
  EXPECT_EQ(config.tls_reload_interval_ms(), 5000u);
  EXPECT_EQ(config.token_file(), "/etc/svdserve/tokens");
  EXPECT_EQ(config.token_reload_interval_ms(), 250u);
  EXPECT_EQ(config.max_rank(), 77u);
}

// --load-dir DIR is a load root too, so that `svdserve --load-dir /data` just works.
TEST(Flags, LoadRootsAddToTheConfigsAndLoadDirIsOne) {
  v1::ServerConfig config;
  config.add_load_roots("/from/config");
  apply_overrides(parse({"--load-root", "/images", "--load-root=/more/", "--load-dir", "/data"}),
                  config);
  EXPECT_EQ(std::vector<std::string>(config.load_roots().begin(), config.load_roots().end()),
            (std::vector<std::string>{"/from/config", "/images", "/more", "/data"}));

  v1::ServerConfig once;
  apply_overrides(parse({"--load-root", "/data", "--load-dir", "/data/"}), once);
  EXPECT_EQ(once.load_roots_size(), 1);
}

// Paths on the command line are relative to the working folder, as a shell user expects.
TEST(Flags, RelativeLoadPathsAreMadeAbsolute) {
  const std::string here = std::filesystem::current_path().string();
  const CommandLine command_line = parse({"--load-root", "images", "--load-dir", "photos/"});
  EXPECT_EQ(command_line.load_dir, here + "/photos");
  v1::ServerConfig config;
  apply_overrides(command_line, config);
  ASSERT_EQ(config.load_roots_size(), 2);
  EXPECT_EQ(config.load_roots(0), here + "/images");
  EXPECT_EQ(config.load_roots(1), here + "/photos");
}

TEST(Flags, ReflectionIsTrueOrFalse) {
  v1::ServerConfig config;
  apply_overrides(parse({"--reflection", "false"}), config);
  EXPECT_TRUE(config.has_reflection());
  EXPECT_FALSE(config.reflection());
  apply_overrides(parse({"--reflection=true"}), config);
  EXPECT_TRUE(config.reflection());
  const std::string message =
      invalid_argument_message([&] { apply_overrides(parse({"--reflection", "off"}), config); });
  EXPECT_NE(message.find("--reflection must be true or false, got 'off'"), std::string::npos)
      << message;
}

TEST(Flags, CpuSvdNamesTheMethodsItKnows) {
  v1::ServerConfig config;
  apply_overrides(parse({"--cpu-svd=exact"}), config);
  EXPECT_EQ(config.cpu_svd(), v1::CPU_SVD_EXACT);
  apply_overrides(parse({"--cpu-svd", "automatic"}), config);
  EXPECT_EQ(config.cpu_svd(), v1::CPU_SVD_AUTOMATIC);
  EXPECT_THROW(apply_overrides(parse({"--cpu-svd", "randomized"}), config), InvalidArgument);
}

TEST(Flags, GpuSvdNamesTheMethodsItKnows) {
  v1::ServerConfig config;
  apply_overrides(parse({"--gpu-svd=automatic"}), config);
  EXPECT_EQ(config.gpu_svd(), v1::GPU_SVD_AUTOMATIC);
  EXPECT_THROW(apply_overrides(parse({"--gpu-svd", "fast"}), config), InvalidArgument);
  apply_overrides(parse({"--gpu-jpeg=off"}), config);
  EXPECT_EQ(config.gpu_jpeg(), v1::GPU_JPEG_OFF);
  apply_overrides(parse({"--gpu-jpeg", "nvjpeg"}), config);
  EXPECT_EQ(config.gpu_jpeg(), v1::GPU_JPEG_NVJPEG);
  EXPECT_THROW(apply_overrides(parse({"--gpu-jpeg", "cpu"}), config), InvalidArgument);
}

TEST(Flags, LaterFlagsWin) {
  v1::ServerConfig config;
  apply_overrides(parse({"--workers", "2", "--workers=5", "--backend", "gpu", "--backend=auto"}),
                  config);
  EXPECT_EQ(config.worker_threads(), 5u);
  EXPECT_EQ(config.backend(), v1::BACKEND_KIND_AUTO);
}

TEST(Flags, HelpAndVersion) {
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_TRUE(parse({"-h"}).help);
  EXPECT_TRUE(parse({"--version"}).version);
  EXPECT_FALSE(parse({"--version"}).help);
}

TEST(Flags, UnknownFlagIsNamed) {
  const std::string message = invalid_argument_message([] { (void)parse({"--frobnicate", "1"}); });
  EXPECT_NE(message.find("--frobnicate"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown flag"), std::string::npos) << message;
}

TEST(Flags, MissingValueAndStrayArgumentsAreRefused) {
  const std::string missing = invalid_argument_message([] { (void)parse({"--workers"}); });
  EXPECT_NE(missing.find("--workers needs a value"), std::string::npos) << missing;
  const std::string stray = invalid_argument_message([] { (void)parse({"serve"}); });
  EXPECT_NE(stray.find("'serve'"), std::string::npos) << stray;
}

class FlagsBadNumber : public ::testing::TestWithParam<const char*> {};

TEST_P(FlagsBadNumber, IsRefusedWithTheFlagAndTheValue) {
  const std::string value = GetParam();
  const CommandLine command_line = parse({"--workers", value});
  v1::ServerConfig config;
  const std::string message =
      invalid_argument_message([&] { apply_overrides(command_line, config); });
  EXPECT_NE(message.find("--workers"), std::string::npos) << message;
  EXPECT_NE(message.find("'" + value + "'"), std::string::npos) << message;
  EXPECT_EQ(config.worker_threads(), 0u) << "a refused value must not be half-applied";
}

INSTANTIATE_TEST_SUITE_P(Values, FlagsBadNumber,
                         ::testing::Values("abc", "-3", "12x", "", " 4", "1.5",
                                           "99999999999999999999999",
                                           "4294967296"));  // would wrap to 0 in a uint32

TEST(Flags, MemoryBudgetMustNotOverflowInBytes) {
  constexpr uint64_t kLargestMib = std::numeric_limits<uint64_t>::max() >> 20;
  v1::ServerConfig config;
  apply_overrides(parse({"--memory-budget-mib", std::to_string(kLargestMib)}), config);
  EXPECT_EQ(config.memory_budget_bytes(), kLargestMib << 20);

  v1::ServerConfig overflowing;
  const std::string message = invalid_argument_message([&] {
    apply_overrides(parse({"--memory-budget-mib", std::to_string(kLargestMib + 1)}), overflowing);
  });
  EXPECT_NE(message.find("--memory-budget-mib"), std::string::npos) << message;
  EXPECT_EQ(overflowing.memory_budget_bytes(), 0u);
}

TEST(Flags, BadBackendIsRefused) {
  v1::ServerConfig config;
  const std::string message =
      invalid_argument_message([&] { apply_overrides(parse({"--backend=tpu"}), config); });
  EXPECT_NE(message.find("auto, cpu or gpu"), std::string::npos) << message;
  EXPECT_NE(message.find("'tpu'"), std::string::npos) << message;
}

TEST(Flags, UsageMentionsEveryFlag) {
  const std::string text = usage();
  for (const char* flag :
       {"--config", "--listen", "--backend", "--load-dir", "--workers", "--loaders", "--encoders", "--cpu-compute-threads",
        "--max-batch-size", "--max-queue-delay-us", "--queue-capacity", "--memory-budget-mib",
        "--host-buffer-pool-mib", "--gpu-streams", "--gpu-svd", "--gpu-jpeg", "--metrics-port", "--metrics-host", "--drain-timeout-ms", "--lame-duck-ms", "--log-level", "--version",
        "--max-compute-ms", "--load-root", "--reflection", "--help", "--tls-cert", "--tls-key",
        "--tls-client-ca", "--tls-reload-interval-ms", "--token-file",
        "--token-reload-interval-ms"}) {
    EXPECT_NE(text.find(flag), std::string::npos) << flag;
  }
}

TEST(Flags, PersistenceFlagsReachTheConfigAndTheUsage) {
  v1::ServerConfig config;
  apply_overrides(parse({"--data-dir", "/data/factors", "--durability=async",
                         "--persist-threads", "4"}),
                  config);
  EXPECT_EQ(config.data_dir(), "/data/factors");
  EXPECT_EQ(config.durability(), v1::DURABILITY_ASYNC);
  EXPECT_EQ(config.persist_threads(), 4u);
  EXPECT_THROW(apply_overrides(parse({"--durability", "later"}), config), InvalidArgument);
  for (const char* flag : {"--data-dir", "--durability", "--persist-threads"}) {
    EXPECT_NE(usage().find(flag), std::string::npos) << flag;
  }
}

TEST(Flags, RedisFlagsReachTheConfigAndTheUsage) {
  v1::ServerConfig config;
  apply_overrides(parse({"--redis-address", "unix:/run/redis/redis.sock",
                         "--redis-password-file=/etc/svdserve/redis-password"}),
                  config);
  EXPECT_EQ(config.redis_address(), "unix:/run/redis/redis.sock");
  EXPECT_EQ(config.redis_password_file(), "/etc/svdserve/redis-password");
  for (const char* flag : {"--redis-address", "--redis-password-file"}) {
    EXPECT_NE(usage().find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace svdserve
