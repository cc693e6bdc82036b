// TLS and mutual TLS against the real svdserve binary, with certificates made by the real openssl
// binary: the CLI, the client library and a plain gRPC channel connect when they trust the
// server's CA (and, for mutual TLS, present a certificate the client CA signed), and fail
// otherwise; replaced certificate files are served without a restart.

#include <gtest/gtest.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "process.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"
#include "tests/client/temp_folder.hpp"
#include "tests/support/test_certificates.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

namespace fs = std::filesystem;

// Failing handshakes end a call at once (no wait_for_ready); this only bounds a hung one.
constexpr auto kCallTimeout = std::chrono::seconds(10);
constexpr auto kCliTimeoutSeconds = "10";
constexpr int kExitUnreachable = 3;
constexpr const char* kReloadIntervalMs = "1000";  // gRPC's file watcher counts whole seconds
// Generous against a loaded 2-core machine; a rotation normally shows within the interval.
constexpr auto kRotationPatience = std::chrono::seconds(30);

// A client on its own connection that fails fast: each call is a fresh TLS handshake.
Client tls_client(const std::string& address, std::optional<ClientTls> tls) {
  ClientOptions options;
  options.timeout = kCallTimeout;
  options.dedicated_connection = true;
  options.tls = std::move(tls);
  return Client(address, options);
}

grpc::Status health_with(const std::string& address, std::optional<ClientTls> tls) {
  const auto health = tls_client(address, std::move(tls)).health();
  return health.ok() ? grpc::Status::OK : health.status();
}

// A plain gRPC channel and the generated health stub: what any gRPC client (grpcurl, ghz) does.
grpc::Status plain_grpc_health(const std::string& address,
                               const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  const auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateCustomChannel(address, credentials, arguments));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (status.ok() && response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return {grpc::StatusCode::UNKNOWN, "not SERVING"};
  }
  return status;
}

std::shared_ptr<grpc::ChannelCredentials> plain_tls_credentials(const ClientTls& tls) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = read_file_bytes(tls.ca_file);
  if (!tls.cert_file.empty()) {
    options.pem_cert_chain = read_file_bytes(tls.cert_file);
    options.pem_private_key = read_file_bytes(tls.key_file);
  }
  return grpc::SslCredentials(options);
}

// The first line of a log holding `text`; empty when none does.
std::string log_line(const std::string& log, const std::string& text) {
  const auto at = log.find(text);
  if (at == std::string::npos) return {};
  const auto begin = log.rfind('\n', at);
  const auto start = begin == std::string::npos ? 0 : begin + 1;
  return log.substr(start, log.find('\n', at) - start);
}

ProcessResult cli(const std::string& address, const std::vector<std::string>& tls_args,
                  const std::string& command) {
  std::vector<std::string> args{"--server", address, "--timeout", kCliTimeoutSeconds};
  args.insert(args.end(), tls_args.begin(), tls_args.end());
  args.push_back(command);
  return run_process(svdserve::test::cli_binary(), args);
}

// Two unrelated CAs in one folder: the server's ("trusted") and a stranger's ("other").
class TlsTest : public ::testing::Test {
 protected:
  TempFolder folder_{"svdserve_tls_test"};
  TestCertificateAuthority trusted_{folder_.path(), "trusted"};
  TestCertificateAuthority other_{folder_.path(), "other"};
  CertifiedKey server_cert_ = trusted_.issue_server("server");

  [[nodiscard]] std::vector<std::string> tls_flags() const {
    return {"--tls-cert", server_cert_.cert.string(), "--tls-key", server_cert_.key.string()};
  }
  [[nodiscard]] ClientTls trusting(const TestCertificateAuthority& ca) const {
    return {.ca_file = ca.cert().string()};
  }
  [[nodiscard]] ClientTls trusting_with(const TestCertificateAuthority& ca,
                                        const CertifiedKey& client) const {
    return {.ca_file = ca.cert().string(), .cert_file = client.cert.string(),
            .key_file = client.key.string()};
  }
};

TEST_F(TlsTest, ClientsTrustingTheServersCaConnect) {
  ServerProcess server(tls_flags(), trusting(trusted_));
  ASSERT_TRUE(server.serving());

  // The client library: a real round trip of pixels over TLS.
  const auto decomposed = server.client().decompose(read_test_image("baboon.jpg"), 8, "baboon");
  ASSERT_TRUE(decomposed.ok()) << decomposed.status().error_message();
  const auto reconstructed = server.client().reconstruct("baboon", Rank{4});
  ASSERT_TRUE(reconstructed.ok()) << reconstructed.status().error_message();
  EXPECT_EQ(reconstructed->shape().width(), 512u);
  EXPECT_EQ(reconstructed->pixels().size(), 512u * 512u * 3u);

  EXPECT_TRUE(plain_grpc_health(server.address(), plain_tls_credentials(trusting(trusted_))).ok());

  const ProcessResult info = cli(server.address(), {"--tls", "--ca", trusted_.cert().string()},
                                 "server-info");
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("cpu"), std::string::npos) << info.out;
  // --ca alone means TLS too.
  const ProcessResult implied = cli(server.address(), {"--ca", trusted_.cert().string()}, "health");
  EXPECT_EQ(implied.exit_code, 0) << implied.err;

  const ProcessResult stopped = server.stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_NE(stopped.err.find("tls=on"), std::string::npos) << stopped.err;
  EXPECT_EQ(stopped.err.find("exposed"), std::string::npos) << stopped.err;  // loopback
}

TEST_F(TlsTest, PlaintextClientsAndClientsTrustingAnotherCaFail) {
  ServerProcess server(tls_flags(), trusting(trusted_));
  ASSERT_TRUE(server.serving());

  EXPECT_EQ(health_with(server.address(), std::nullopt).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(health_with(server.address(), trusting(other_)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(plain_grpc_health(server.address(), grpc::InsecureChannelCredentials()).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(plain_grpc_health(server.address(), plain_tls_credentials(trusting(other_)))
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);

  const ProcessResult plaintext = cli(server.address(), {}, "health");
  EXPECT_EQ(plaintext.exit_code, kExitUnreachable) << plaintext.err;
  const ProcessResult stranger = cli(server.address(), {"--tls", "--ca", other_.cert().string()},
                                     "health");
  EXPECT_EQ(stranger.exit_code, kExitUnreachable) << stranger.err;
  // The system's roots know no test CA.
  const ProcessResult system_roots = cli(server.address(), {"--tls"}, "health");
  EXPECT_EQ(system_roots.exit_code, kExitUnreachable) << system_roots.err;

  // Still serving those who trust it.
  EXPECT_TRUE(health_with(server.address(), trusting(trusted_)).ok());
}

TEST_F(TlsTest, MutualTlsAcceptsOnlyClientCertificatesOfTheClientCa) {
  const CertifiedKey alice = trusted_.issue_client("alice");
  const CertifiedKey mallory = other_.issue_client("mallory");
  std::vector<std::string> flags = tls_flags();
  flags.insert(flags.end(), {"--tls-client-ca", trusted_.cert().string()});
  ServerProcess server(flags, trusting_with(trusted_, alice));
  ASSERT_TRUE(server.serving());

  EXPECT_TRUE(health_with(server.address(), trusting_with(trusted_, alice)).ok());
  EXPECT_TRUE(
      plain_grpc_health(server.address(), plain_tls_credentials(trusting_with(trusted_, alice)))
          .ok());
  const ProcessResult with_cert =
      cli(server.address(),
          {"--tls", "--ca", trusted_.cert().string(), "--cert", alice.cert.string(), "--key",
           alice.key.string()},
          "server-info");
  EXPECT_EQ(with_cert.exit_code, 0) << with_cert.err;

  // No certificate, or one from another CA: refused in the handshake.
  EXPECT_EQ(health_with(server.address(), trusting(trusted_)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(health_with(server.address(), trusting_with(trusted_, mallory)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(
      plain_grpc_health(server.address(), plain_tls_credentials(trusting(trusted_))).ok());
  const ProcessResult without_cert =
      cli(server.address(), {"--tls", "--ca", trusted_.cert().string()}, "health");
  EXPECT_EQ(without_cert.exit_code, kExitUnreachable) << without_cert.err;
  const ProcessResult foreign_cert =
      cli(server.address(),
          {"--tls", "--ca", trusted_.cert().string(), "--cert", mallory.cert.string(), "--key",
           mallory.key.string()},
          "health");
  EXPECT_EQ(foreign_cert.exit_code, kExitUnreachable) << foreign_cert.err;

  const ProcessResult stopped = server.stop();
  EXPECT_NE(stopped.err.find("tls=mutual"), std::string::npos) << stopped.err;
}

TEST_F(TlsTest, ReplacedCertificateFilesAreServedWithoutARestart) {
  // The server reads the files where an operator's tooling keeps them.
  const fs::path live = folder_.path() / "live";
  fs::create_directory(live);
  const CertifiedKey served{live / "server.crt", live / "server.key"};
  fs::copy_file(server_cert_.cert, served.cert);
  fs::copy_file(server_cert_.key, served.key);
  ServerProcess server({"--tls-cert", served.cert.string(), "--tls-key", served.key.string(),
                        "--tls-reload-interval-ms", kReloadIntervalMs},
                       trusting(trusted_));
  ASSERT_TRUE(server.serving());
  const auto before = server.client().server_info();
  ASSERT_TRUE(before.ok()) << before.status().error_message();
  ASSERT_FALSE(health_with(server.address(), trusting(other_)).ok());

  // A renewal from another CA, moved into place as certificate tools do (rename: no torn file).
  const CertifiedKey renewed = other_.issue_server("renewed");
  fs::rename(renewed.key, served.key);
  fs::rename(renewed.cert, served.cert);

  EXPECT_TRUE(eventually([&] { return health_with(server.address(), trusting(other_)).ok(); },
                         kRotationPatience))
      << "the renewed certificate was not served";
  EXPECT_EQ(health_with(server.address(), trusting(trusted_)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  const ProcessResult cli_after =
      cli(server.address(), {"--tls", "--ca", other_.cert().string()}, "health");
  EXPECT_EQ(cli_after.exit_code, 0) << cli_after.err;

  // The same process all along.
  const auto after = tls_client(server.address(), trusting(other_)).server_info();
  ASSERT_TRUE(after.ok()) << after.status().error_message();
  EXPECT_EQ(after->started_unix_ms(), before->started_unix_ms());
  const ProcessResult stopped = server.stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
}

TEST_F(TlsTest, BadTlsConfigStopsTheStartNamingTheFieldNotTheFile) {
  const std::string server_binary = svdserve::test::server_binary();
  const std::string listen = "127.0.0.1:" + std::to_string(free_port());

  const ProcessResult no_key =
      run_process(server_binary, {"--listen", listen, "--tls-cert", server_cert_.cert.string()});
  EXPECT_EQ(no_key.exit_code, 2) << no_key.err;
  EXPECT_NE(no_key.err.find("tls_key_file"), std::string::npos) << no_key.err;

  // The certificate given as the key: named, and none of its text echoed.
  const ProcessResult swapped = run_process(
      server_binary, {"--listen", listen, "--tls-cert", server_cert_.cert.string(), "--tls-key",
                      server_cert_.cert.string()});
  EXPECT_EQ(swapped.exit_code, 2) << swapped.err;
  EXPECT_NE(swapped.err.find("tls_key_file"), std::string::npos) << swapped.err;
  EXPECT_NE(swapped.err.find("no unencrypted PEM private key"), std::string::npos) << swapped.err;
  const std::string pem = read_file_bytes(server_cert_.cert.string());
  const std::string body_line = pem.substr(pem.find('\n') + 1, 40);
  EXPECT_EQ(swapped.err.find(body_line), std::string::npos) << swapped.err;

  const ProcessResult missing_ca = run_process(
      server_binary, {"--listen", listen, "--tls-cert", server_cert_.cert.string(), "--tls-key",
                      server_cert_.key.string(), "--tls-client-ca",
                      (folder_.path() / "absent.crt").string()});
  EXPECT_EQ(missing_ca.exit_code, 2) << missing_ca.err;
  EXPECT_NE(missing_ca.err.find("tls_client_ca_file"), std::string::npos) << missing_ca.err;
}

// Safe exposure by default: an open port is a visible choice.
TEST_F(TlsTest, ListenersBeyondLoopbackWithoutTlsAreWarnedAbout) {
  const int port = free_port();
  const int metrics_port = free_port();
  const std::string everywhere = "0.0.0.0:" + std::to_string(port);
  const std::string loopback = "127.0.0.1:" + std::to_string(port);
  {
    Process plaintext(svdserve::test::server_binary(),
                      {"--listen", everywhere, "--backend", "cpu", "--durability", "none",
                       "--metrics-port",
                       std::to_string(metrics_port), "--metrics-host", "0.0.0.0"});
    ClientOptions options;
    options.wait_for_ready = true;
    ASSERT_TRUE(Client(loopback, options).health().ok());
    plaintext.signal(SIGTERM);
    const ProcessResult stopped = plaintext.wait(std::chrono::seconds(30));
    EXPECT_NE(log_line(stopped.err, "exposed listener address=" + everywhere).find(" warning "),
              std::string::npos)
        << stopped.err;
    EXPECT_NE(log_line(stopped.err, "exposed metrics endpoint host=0.0.0.0").find(" warning "),
              std::string::npos)
        << stopped.err;
  }
  {
    std::vector<std::string> args{"--listen", everywhere, "--backend", "cpu", "--durability",
                                  "none"};
    const std::vector<std::string> tls = tls_flags();
    args.insert(args.end(), tls.begin(), tls.end());
    Process with_tls(svdserve::test::server_binary(), args);
    ClientOptions options;
    options.wait_for_ready = true;
    options.tls = trusting(trusted_);
    ASSERT_TRUE(Client(loopback, options).health().ok());
    with_tls.signal(SIGTERM);
    const ProcessResult stopped = with_tls.wait(std::chrono::seconds(30));
    EXPECT_EQ(stopped.err.find("exposed"), std::string::npos) << stopped.err;
  }
}

}  // namespace
}  // namespace svdserve::testing
