#include "tests/test_paths.hpp"
#include "server/process/config.hpp"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "kernels/errors.hpp"
#include "tests/client/temp_folder.hpp"
#include "tests/support/test_certificates.hpp"

namespace svdserve {
namespace {

const std::string kShippedConfig = std::string(svdserve::test::source_dir()) + "/config/svdserve.textproto";

// A text file in the temp folder, removed again when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("svdserve_config_test_" + std::to_string(::getpid()) + "_" + test->name() + ".textproto");
    std::ofstream(path_) << text;
  }
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  [[nodiscard]] std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::string validation_message(const v1::ServerConfig& config) {
  try {
    validate(config);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "validate accepted an invalid config";
  return {};
}

v1::ServerConfig defaults() {
  v1::ServerConfig config;
  apply_defaults(config);
  return config;
}

TEST(Config, ShippedFileParsesAndValidates) {
  v1::ServerConfig config = read_config_file(kShippedConfig);
  EXPECT_EQ(config.listen_address(), "0.0.0.0:50051");
  EXPECT_EQ(config.backend(), v1::BACKEND_KIND_AUTO);
  EXPECT_EQ(config.queue_capacity(), 256u);
  EXPECT_EQ(config.full_queue_policy(), v1::FULL_QUEUE_POLICY_REJECT);
  EXPECT_EQ(config.full_store_policy(), v1::FULL_STORE_POLICY_EVICT_LRU);
  EXPECT_EQ(config.max_batch_size(), 16u);
  EXPECT_EQ(config.max_message_bytes(), 64u << 20);
  apply_defaults(config);
  EXPECT_NO_THROW(validate(config));
}

TEST(Config, ShippedFileStatesExactlyTheDefaults) {
  // The file says "every value below is the default": hold it to that.
  v1::ServerConfig shipped = read_config_file(kShippedConfig);
  apply_defaults(shipped);
  std::string differences;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(defaults(), shipped)) << differences;
}

TEST(Config, ApplyDefaultsFillsZerosAndKeepsSetValues) {
  v1::ServerConfig config;
  config.set_max_batch_size(7);
  config.set_listen_address("127.0.0.1:9999");
  config.set_memory_budget_bytes(12345);
  apply_defaults(config);

  EXPECT_EQ(config.max_batch_size(), 7u);
  EXPECT_EQ(config.listen_address(), "127.0.0.1:9999");
  EXPECT_EQ(config.memory_budget_bytes(), 12345u);

  EXPECT_EQ(config.loader_threads(), std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(config.encoder_threads(), std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(config.worker_threads(), std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(config.cpu_compute_threads(), std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(config.queue_capacity(), 256u);
  EXPECT_EQ(config.max_queue_delay_us(), 100u);
  EXPECT_EQ(config.decompose_queue_delay_us(), 2000u);
  EXPECT_EQ(config.default_max_rank(), 256u);
  EXPECT_EQ(config.max_rank(), 4096u);
  EXPECT_EQ(config.max_image_width(), 8192u);
  EXPECT_EQ(config.max_image_height(), 8192u);
  EXPECT_EQ(config.max_image_bytes(), 60u << 20);
  EXPECT_EQ(config.max_message_bytes(), 64u << 20);
  EXPECT_EQ(config.max_batch_items(), 256u);
  EXPECT_EQ(config.max_compute_ms(), 60'000u);
  EXPECT_EQ(config.host_buffer_pool_bytes(), 256u << 20);
  EXPECT_EQ(config.drain_timeout_ms(), 5000u);
  EXPECT_EQ(config.lame_duck_ms(), 1000u);
  EXPECT_EQ(config.log_level(), "info");
  EXPECT_EQ(config.gpu_streams(), 4u);
  EXPECT_DOUBLE_EQ(config.gpu_memory_fraction(), 0.8);
  EXPECT_EQ(config.evicted_history(), 1024u);
  EXPECT_EQ(config.metrics_host(), "127.0.0.1");
  EXPECT_EQ(config.max_images(), 1'000'000u);
  EXPECT_EQ(config.grpc_memory_quota_bytes(), 1024u << 20);
  EXPECT_EQ(config.max_concurrent_streams(), 100u);
  EXPECT_EQ(config.max_connection_idle_ms(), 300'000u);
  EXPECT_EQ(config.keepalive_time_ms(), 60'000u);
  EXPECT_EQ(config.keepalive_timeout_ms(), 20'000u);
  EXPECT_EQ(config.min_client_ping_interval_ms(), 10'000u);
  EXPECT_TRUE(config.reflection());
  EXPECT_TRUE(config.load_roots().empty());
  EXPECT_EQ(config.tls_reload_interval_ms(), 60'000u);
  EXPECT_TRUE(config.tls_cert_file().empty());  // plaintext unless asked
  EXPECT_EQ(config.token_file(), "");  // no authentication
  EXPECT_EQ(config.token_reload_interval_ms(), 1000u);
  EXPECT_NO_THROW(validate(config));

  // Idempotent.
  v1::ServerConfig again = config;
  apply_defaults(again);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(config, again));
}

TEST(Config, ValidateReportsEveryProblemInOneMessage) {
  v1::ServerConfig config = defaults();
  config.set_listen_address("no-port-here");
  config.set_max_batch_size(5000);
  config.set_gpu_memory_fraction(1.5);
  config.set_default_max_rank(5000);  // above max_rank 4096
  config.set_log_level("loud");
  const std::string message = validation_message(config);
  EXPECT_EQ(message.rfind("invalid config: ", 0), 0u) << message;
  for (const char* expected : {"listen_address must be host:port, got 'no-port-here'",
                               "max_batch_size must be 1..4096", "gpu_memory_fraction",
                               "default_max_rank must not exceed max_rank", "loud"}) {
    EXPECT_NE(message.find(expected), std::string::npos) << "missing '" << expected << "' in: "
                                                         << message;
  }
  // Valid fields are not mentioned.
  EXPECT_EQ(message.find("queue_capacity"), std::string::npos) << message;
}

struct InvalidField {
  const char* name;
  void (*break_it)(v1::ServerConfig&);
  const char* expected;
};

class ConfigInvalidField : public ::testing::TestWithParam<InvalidField> {};

TEST_P(ConfigInvalidField, IsReported) {
  v1::ServerConfig config = defaults();
  GetParam().break_it(config);
  const std::string message = validation_message(config);
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, ConfigInvalidField,
    ::testing::Values(
        InvalidField{"loader_threads", [](v1::ServerConfig& c) { c.set_loader_threads(257); }, "loader_threads"},
        InvalidField{"encoder_threads", [](v1::ServerConfig& c) { c.set_encoder_threads(257); }, "encoder_threads"},
        InvalidField{"worker_threads", [](v1::ServerConfig& c) { c.set_worker_threads(1000); }, "worker_threads"},
        InvalidField{"cpu_compute_threads", [](v1::ServerConfig& c) { c.set_cpu_compute_threads(2000); },
                     "cpu_compute_threads"},
        InvalidField{"queue_capacity", [](v1::ServerConfig& c) { c.set_queue_capacity(2'000'000); },
                     "queue_capacity"},
        InvalidField{"max_queue_delay_us", [](v1::ServerConfig& c) { c.set_max_queue_delay_us(2'000'000); },
                     "max_queue_delay_us"},
        InvalidField{"decompose_queue_delay_us",
                     [](v1::ServerConfig& c) { c.set_decompose_queue_delay_us(2'000'000); },
                     "decompose_queue_delay_us"},
        InvalidField{"max_image_width", [](v1::ServerConfig& c) { c.set_max_image_width(70000); },
                     "max_image_width/height"},
        InvalidField{"max_image_bytes",
                     [](v1::ServerConfig& c) { c.set_max_image_bytes(c.max_message_bytes() + 1); },
                     "max_image_bytes must not exceed max_message_bytes"},
        InvalidField{"max_message_bytes", [](v1::ServerConfig& c) {
                       c.set_max_message_bytes(uint64_t{4} << 30);
                       c.set_max_image_bytes(1);
                     },
                     "max_message_bytes must be under 2 GiB"},
        InvalidField{"gpu_streams", [](v1::ServerConfig& c) { c.set_gpu_streams(65); }, "gpu_streams"},
        InvalidField{"gpu_memory_fraction_negative",
                     [](v1::ServerConfig& c) { c.set_gpu_memory_fraction(-0.5); }, "gpu_memory_fraction"},
        InvalidField{"listen_port_too_large",
                     [](v1::ServerConfig& c) { c.set_listen_address("127.0.0.1:99999"); },
                     "listen_address port must be 0..65535, got '99999'"},
        InvalidField{"listen_port_not_a_number",
                     [](v1::ServerConfig& c) { c.set_listen_address("127.0.0.1:http"); },
                     "listen_address port must be 0..65535, got 'http'"},
        InvalidField{"listen_port_empty",
                     [](v1::ServerConfig& c) { c.set_listen_address("[::1]:"); },
                     "listen_address port must be 0..65535, got ''"},
        InvalidField{"metrics_port", [](v1::ServerConfig& c) { c.set_metrics_port(70000); }, "metrics_port"},
        InvalidField{"metrics_host", [](v1::ServerConfig& c) { c.set_metrics_host("localhost"); },
                     "metrics_host must be an IP address"},
        InvalidField{"max_batch_items", [](v1::ServerConfig& c) { c.set_max_batch_items(200'000); },
                     "max_batch_items"},
        InvalidField{"max_images", [](v1::ServerConfig& c) { c.set_max_images(200'000'000); },
                     "max_images"},
        InvalidField{"grpc_memory_quota_bytes",
                     [](v1::ServerConfig& c) {
                       c.set_grpc_memory_quota_bytes(c.max_message_bytes() - 1);
                     },
                     "grpc_memory_quota_bytes must be at least max_message_bytes"},
        InvalidField{"max_concurrent_streams",
                     [](v1::ServerConfig& c) { c.set_max_concurrent_streams(200'000); },
                     "max_concurrent_streams"},
        InvalidField{"keepalive_timeout_ms",
                     [](v1::ServerConfig& c) { c.set_keepalive_timeout_ms(c.keepalive_time_ms()); },
                     "keepalive_timeout_ms must be below keepalive_time_ms"},
        InvalidField{"max_connection_idle_ms",
                     [](v1::ServerConfig& c) { c.set_max_connection_idle_ms(100'000'000); },
                     "max_connection_idle_ms"},
        InvalidField{"max_compute_ms",
                     [](v1::ServerConfig& c) { c.set_max_compute_ms(86'400'001); },
                     "max_compute_ms must be at most 86400000"},
        InvalidField{"tls_reload_interval_ms_not_whole_seconds",
                     [](v1::ServerConfig& c) { c.set_tls_reload_interval_ms(500); },
                     "tls_reload_interval_ms must be whole seconds, 1000..86400000"},
        InvalidField{"tls_reload_interval_ms_above_a_day",
                     [](v1::ServerConfig& c) { c.set_tls_reload_interval_ms(90'000'000); },
                     "tls_reload_interval_ms must be whole seconds"},
        InvalidField{"tls_cert_file_without_key",
                     [](v1::ServerConfig& c) { c.set_tls_cert_file("/nonexistent/server.crt"); },
                     "tls_cert_file and tls_key_file must be set together"},
        InvalidField{"tls_key_file_without_cert",
                     [](v1::ServerConfig& c) { c.set_tls_key_file("/nonexistent/server.key"); },
                     "tls_cert_file and tls_key_file must be set together"},
        InvalidField{"tls_client_ca_file_without_tls",
                     [](v1::ServerConfig& c) { c.set_tls_client_ca_file("/nonexistent/ca.crt"); },
                     "tls_client_ca_file needs tls_cert_file and tls_key_file"}),
    [](const auto& test_info) { return std::string(test_info.param.name); });

// Port 0 asks for any free port (tests use it); the port bound is what the server reports.
TEST(Config, ListenPortZeroAndIpv6AddressesAreValid) {
  for (const char* address : {"127.0.0.1:0", "0.0.0.0:65535", "[::]:50051", "localhost:1"}) {
    v1::ServerConfig config = defaults();
    config.set_listen_address(address);
    EXPECT_NO_THROW(validate(config)) << address;
  }
}

// Zero is a real choice for the batcher's delay (no waiting), not "unset".
TEST(Config, ZeroQueueDelayIsKept) {
  v1::ServerConfig config;
  config.set_max_queue_delay_us(0);
  apply_defaults(config);
  EXPECT_EQ(config.max_queue_delay_us(), 0u);
  EXPECT_NO_THROW(validate(config));
}

// No lame duck at all is a choice too.
TEST(Config, ZeroLameDuckIsKept) {
  v1::ServerConfig config;
  config.set_lame_duck_ms(0);
  apply_defaults(config);
  EXPECT_EQ(config.lame_duck_ms(), 0u);
  EXPECT_NO_THROW(validate(config));
}

// So is no compute limit.
TEST(Config, ZeroMaxComputeIsKept) {
  v1::ServerConfig config;
  config.set_max_compute_ms(0);
  apply_defaults(config);
  EXPECT_EQ(config.max_compute_ms(), 0u);
  EXPECT_NO_THROW(validate(config));
}

// Reflection off is a choice, not "unset".
TEST(Config, ReflectionOffIsKept) {
  v1::ServerConfig config;
  config.set_reflection(false);
  apply_defaults(config);
  EXPECT_FALSE(config.reflection());
}

TEST(Config, LoadRootsMustBeExistingFoldersByTheirOwnPaths) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::canonical(fs::temp_directory_path()) /
                          ("svdserve_config_roots_" + std::to_string(::getpid()));
  fs::create_directories(folder / "real");
  fs::create_directory_symlink(folder / "real", folder / "link");
  v1::ServerConfig config = defaults();
  config.add_load_roots((folder / "real").string());
  EXPECT_NO_THROW(validate(config));

  for (const std::string& root : {std::string("relative/images"), (folder / "missing").string(),
                                  (folder / "link").string()}) {
    v1::ServerConfig broken = config;
    broken.add_load_roots(root);
    const std::string message = validation_message(broken);
    EXPECT_NE(message.find("load_roots: '" + root + "'"), std::string::npos) << message;
  }
  v1::ServerConfig linked = config;
  linked.add_load_roots((folder / "link").string());
  EXPECT_NE(validation_message(linked).find("name the folder by its own path, '" +
                                            (folder / "real").string() + "'"),
            std::string::npos);
  fs::remove_all(folder);
}

TEST(Config, SyntaxErrorNamesTheLine) {
  TempFile file("listen_address: \"127.0.0.1:1\"\n"
                "max_batch_size: 8\n"
                "queue_capacity: lots\n");
  try {
    (void)read_config_file(file.path());
    FAIL() << "a bad value parsed";
  } catch (const InvalidArgument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(file.path()), std::string::npos) << message;
    EXPECT_NE(message.find("line 3"), std::string::npos) << message;
  }
}

TEST(Config, UnknownFieldNamesTheLine) {
  TempFile file("max_batch_size: 8\n\nmax_batch_sise: 9\n");
  try {
    (void)read_config_file(file.path());
    FAIL() << "an unknown field parsed";
  } catch (const InvalidArgument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("line 3"), std::string::npos) << message;
    EXPECT_NE(message.find("unknown field"), std::string::npos) << message;
  }
}

TEST(Config, AFileThatIsNotAConfigIsNotEchoed) {
  // The parser's own messages quote what they choke on: the first token of /etc/shadow, say.
  for (const std::string text : {"hunter2x7f3a9c:$y$secret-hash:19000:0:99999:7:::\n",
                                 "max_batch_size: 8\nhunter2x7f3a9c secret-hash\n",
                                 "max_batch_size: hunter2x7f3a9c\n",
                                 "full_store_policy: hunter2x7f3a9c\n"}) {
    TempFile file(text);
    try {
      (void)read_config_file(file.path());
      ADD_FAILURE() << "parsed";
    } catch (const InvalidArgument& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;
      EXPECT_EQ(message.find("secret-hash"), std::string::npos) << message;
      EXPECT_NE(message.find("is not a valid svdserve.v1.ServerConfig"), std::string::npos)
          << message;
      EXPECT_NE(message.find(file.path()), std::string::npos) << message;
    }
  }
}

TEST(Config, MissingFileIsInvalidArgument) {
  const std::string path = "/nonexistent/svdserve.textproto";
  try {
    (void)read_config_file(path);
    FAIL() << "a missing file parsed";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// TLS files are checked at start with certificates the openssl binary made: a mistake stops
// the start naming the field, and a key's text is never quoted.
class TlsConfig : public ::testing::Test {
 protected:
  testing::TempFolder folder_{"svdserve_tls_config_test"};
  testing::TestCertificateAuthority ca_{folder_.path(), "config"};
  testing::CertifiedKey server_ = ca_.issue_server("server");

  [[nodiscard]] v1::ServerConfig with_tls() const {
    v1::ServerConfig config = defaults();
    config.set_tls_cert_file(server_.cert.string());
    config.set_tls_key_file(server_.key.string());
    return config;
  }
};

TEST_F(TlsConfig, RealCertificatesValidateForTlsAndMutualTls) {
  v1::ServerConfig config = with_tls();
  EXPECT_NO_THROW(validate(config));
  config.set_tls_client_ca_file(ca_.cert().string());
  EXPECT_NO_THROW(validate(config));
  // Mounted secrets are symbolic links to the files.
  const auto link = folder_.path() / "linked.crt";
  std::filesystem::create_symlink(server_.cert, link);
  config.set_tls_cert_file(link.string());
  EXPECT_NO_THROW(validate(config));
}

TEST_F(TlsConfig, AMissingFileNamesItsField) {
  v1::ServerConfig config = with_tls();
  config.set_tls_client_ca_file((folder_.path() / "absent.crt").string());
  const std::string message = validation_message(config);
  EXPECT_NE(message.find("tls_client_ca_file '" + (folder_.path() / "absent.crt").string() +
                         "' cannot be read (No such file or directory)"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("tls_cert_file"), std::string::npos) << message;
}

TEST_F(TlsConfig, SwappedFilesAreNamedWithoutQuotingThem) {
  v1::ServerConfig config = with_tls();
  config.set_tls_cert_file(server_.key.string());
  config.set_tls_key_file(server_.cert.string());
  const std::string message = validation_message(config);
  EXPECT_NE(message.find("tls_cert_file '" + server_.key.string() + "' holds no PEM certificate"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("tls_key_file '" + server_.cert.string() +
                         "' holds no unencrypted PEM private key"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("MII"), std::string::npos) << message;  // base64 of DER
}

TEST_F(TlsConfig, AFileThatIsNotPemIsNotEchoed) {
  const auto secret = folder_.path() / "notes.txt";
  std::ofstream(secret) << "hunter2x7f3a9c the password\n";
  v1::ServerConfig config = with_tls();
  config.set_tls_key_file(secret.string());
  const std::string message = validation_message(config);
  EXPECT_NE(message.find("tls_key_file"), std::string::npos) << message;
  EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;
}

TEST_F(TlsConfig, WhatIsNotARegularFileIsRefusedWithoutBlocking) {
  const auto fifo = folder_.path() / "fifo.crt";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);  // opening one to read would block
  for (const std::filesystem::path& path : {fifo, folder_.path()}) {
    v1::ServerConfig config = with_tls();
    config.set_tls_cert_file(path.string());
    const std::string message = validation_message(config);
    EXPECT_NE(message.find("tls_cert_file '" + path.string() + "' is not a regular file"),
              std::string::npos)
        << message;
  }
}

TEST_F(TlsConfig, AnEncryptedKeyIsRefused) {
  // gRPC cannot ask for a passphrase.
  const auto encrypted = folder_.path() / "encrypted.key";
  std::ofstream(encrypted) << "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n"
                              "-----END ENCRYPTED PRIVATE KEY-----\n";
  v1::ServerConfig config = with_tls();
  config.set_tls_key_file(encrypted.string());
  EXPECT_NE(validation_message(config).find("holds no unencrypted PEM private key"),
            std::string::npos);
}

// The token file is read at start: a bad one stops the start, naming the file and the line but
// never the line's text (it may be a token pasted in by mistake).
TEST(Config, ATokenFileMustBeReadableAndParse) {
  v1::ServerConfig config = defaults();
  config.set_token_file("/nonexistent/tokens");
  EXPECT_NE(validation_message(config).find("cannot read token file '/nonexistent/tokens'"),
            std::string::npos)
      << validation_message(config);

  const std::string good_line =
      "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad write ci\n";
  TempFile file("# tokens\n" + good_line + "hunter2-token admin root\n");
  config.set_token_file(file.path());
  const std::string message = validation_message(config);
  EXPECT_NE(message.find(file.path() + "', line 3: "), std::string::npos) << message;
  EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;

  std::ofstream(file.path()) << "# tokens\n" << good_line;
  EXPECT_NO_THROW(validate(config));

  config.set_token_reload_interval_ms(86'400'001);
  EXPECT_NE(validation_message(config).find("token_reload_interval_ms"), std::string::npos);
}

TEST(Config, PartialFileGetsDefaultsForTheRest) {
  TempFile file("worker_threads: 3\nfull_store_policy: FULL_STORE_POLICY_REJECT\n");
  v1::ServerConfig config = read_config_file(file.path());
  apply_defaults(config);
  EXPECT_EQ(config.worker_threads(), 3u);
  EXPECT_EQ(config.full_store_policy(), v1::FULL_STORE_POLICY_REJECT);
  EXPECT_EQ(config.max_batch_size(), 16u);
  EXPECT_NO_THROW(validate(config));
}

// Persistence (51-55): on by default, in a folder, answered after the write.

TEST(PersistenceConfig, DefaultsKeepEveryAnsweredUploadInAFolder) {
  const v1::ServerConfig config = defaults();
  EXPECT_EQ(config.repository(), v1::REPOSITORY_KIND_DIRECTORY);
  EXPECT_EQ(config.durability(), v1::DURABILITY_SYNC);
  EXPECT_EQ(config.data_dir(), "svdserve-data");
  EXPECT_EQ(config.persist_threads(), 16u);
  EXPECT_EQ(config.persist_queue_capacity(), 256u);
  EXPECT_NO_THROW(validate(config));
}

TEST(PersistenceConfig, ChosenModesStayAndBadSizesAreNamed) {
  v1::ServerConfig config;
  config.set_durability(v1::DURABILITY_NONE);
  config.set_data_dir("/var/lib/svdserve");
  apply_defaults(config);
  EXPECT_EQ(config.durability(), v1::DURABILITY_NONE);
  EXPECT_EQ(config.data_dir(), "/var/lib/svdserve");
  config.set_persist_threads(65);
  EXPECT_NE(validation_message(config).find("persist_threads must be 1..64"), std::string::npos);
  config.set_persist_threads(8);
  config.set_persist_queue_capacity(4);
  EXPECT_NE(validation_message(config).find("persist_queue_capacity must be at least"),
            std::string::npos);
}

// The Redis repository's fields (60-65).

TEST(RedisConfig, DefaultsAreLoopbackAndValidate) {
  const v1::ServerConfig config = defaults();
  EXPECT_EQ(config.redis_address(), "127.0.0.1:6379");
  EXPECT_EQ(config.redis_timeout_ms(), 2000u);
  EXPECT_EQ(config.redis_pool_size(), 4u);
  EXPECT_EQ(config.redis_key_prefix(), "svdserve:factors:");
  EXPECT_TRUE(config.redis_password_file().empty());  // no AUTH unless asked
  EXPECT_TRUE(config.redis_username().empty());
  EXPECT_NO_THROW(validate(config));
}

TEST(RedisConfig, SetValuesAreKept) {
  v1::ServerConfig config;
  config.set_redis_address("10.0.0.5:6380");
  config.set_redis_timeout_ms(500);
  config.set_redis_pool_size(16);
  config.set_redis_key_prefix("staging:");
  apply_defaults(config);
  EXPECT_EQ(config.redis_address(), "10.0.0.5:6380");
  EXPECT_EQ(config.redis_timeout_ms(), 500u);
  EXPECT_EQ(config.redis_pool_size(), 16u);
  EXPECT_EQ(config.redis_key_prefix(), "staging:");
}

TEST(RedisConfig, AddressesOfEveryFormValidate) {
  for (const char* address :
       {"127.0.0.1:6379", "redis.internal:6379", "[::1]:6379", "unix:/run/redis/redis.sock"}) {
    v1::ServerConfig config = defaults();
    config.set_redis_address(address);
    EXPECT_NO_THROW(validate(config)) << address;
  }
}

TEST(RedisConfig, EveryBadFieldIsNamed) {
  struct Case {
    void (*break_it)(v1::ServerConfig&);
    const char* expected;
  };
  for (const Case& bad : std::initializer_list<Case>{
           {[](v1::ServerConfig& c) { c.set_redis_address("redis.internal"); },
            "redis_address must be host:port"},
           {[](v1::ServerConfig& c) { c.set_redis_address("redis.internal:0"); },
            "redis_address must be host:port"},
           {[](v1::ServerConfig& c) { c.set_redis_address("::1:6379"); },
            "redis_address must be host:port"},
           {[](v1::ServerConfig& c) { c.set_redis_address("unix:run/redis.sock"); },
            "redis_address must be host:port"},
           {[](v1::ServerConfig& c) { c.set_redis_pool_size(65); }, "redis_pool_size must be 1..64"},
           {[](v1::ServerConfig& c) { c.set_redis_timeout_ms(60'001); },
            "redis_timeout_ms must be at most 60000"},
           {[](v1::ServerConfig& c) { c.set_redis_password_file("/nonexistent/redis-password"); },
            "redis_password_file '/nonexistent/redis-password'"}}) {
    v1::ServerConfig config = defaults();
    bad.break_it(config);
    const std::string message = validation_message(config);
    EXPECT_NE(message.find(bad.expected), std::string::npos) << message;
  }
}

TEST(RedisConfig, APasswordFileIsReadAtStartAndNeverQuoted) {
  const svdserve::testing::TempFolder folder("svdserve_config_redis");
  const std::string path = (folder.path() / "redis-password").string();
  v1::ServerConfig config = defaults();
  config.set_redis_password_file(path);

  std::ofstream(path) << "s3cret-password\n";
  EXPECT_NO_THROW(validate(config));

  std::ofstream(path) << "\ns3cret-on-line-two\n";
  const std::string message = validation_message(config);
  EXPECT_NE(message.find("redis_password_file"), std::string::npos) << message;
  EXPECT_EQ(message.find("s3cret"), std::string::npos) << message;
}

}  // namespace
}  // namespace svdserve
