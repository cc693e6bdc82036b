#include "server/process/exposure.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/process/config.hpp"

namespace svdserve {
namespace {

v1::ServerConfig listening_on(const std::string& address) {
  v1::ServerConfig config;
  apply_defaults(config);
  config.set_listen_address(address);
  return config;
}

bool mentions(const std::vector<std::string>& warnings, const std::string& text) {
  for (const auto& warning : warnings) {
    if (warning.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(Exposure, LoopbackHostsAreRecognised) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "localhost"}) {
    EXPECT_TRUE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "", "10.0.0.5", "192.168.1.1", "fe80::1",
                           "::ffff:10.0.0.1", "example.com", "128.0.0.1"}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
}

TEST(Exposure, ListenAddressesAreJudgedByTheirHost) {
  EXPECT_TRUE(is_loopback_listener("127.0.0.1:50051"));
  EXPECT_TRUE(is_loopback_listener("[::1]:50051"));
  EXPECT_TRUE(is_loopback_listener("localhost:50051"));
  EXPECT_TRUE(is_loopback_listener("unix:/run/svdserve.sock"));  // the file's mode guards it
  EXPECT_FALSE(is_loopback_listener("0.0.0.0:50051"));
  EXPECT_FALSE(is_loopback_listener("[::]:50051"));
  EXPECT_FALSE(is_loopback_listener(":50051"));  // every interface
  EXPECT_FALSE(is_loopback_listener("10.1.2.3:50051"));
}

TEST(Exposure, AnUnguardedListenerBeyondLoopbackIsWarnedAbout) {
  const auto warnings = exposure_warnings(listening_on("0.0.0.0:50051"), {});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(mentions(warnings, "exposed listener address=0.0.0.0:50051"));
  EXPECT_TRUE(mentions(warnings, "without TLS or authentication"));
  EXPECT_TRUE(mentions(warnings, "token_file")) << "names each way to guard it";
}

TEST(Exposure, TlsGuardsAListener) {
  const v1::ServerConfig config = listening_on("[::]:50051");
  EXPECT_TRUE(exposure_warnings(config, {.tls = true, .authentication = false}).empty());
  EXPECT_TRUE(exposure_warnings(config, {.tls = true, .authentication = true}).empty());
}

TEST(Exposure, TokensWithoutTlsBeyondLoopbackAreWarnedAbout) {
  const auto warnings =
      exposure_warnings(listening_on("[::]:50051"), {.tls = false, .authentication = true});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(mentions(warnings, "takes bearer tokens in plaintext"));
  EXPECT_TRUE(mentions(warnings, "tls_cert_file"));
  EXPECT_TRUE(exposure_warnings(listening_on("127.0.0.1:50051"),
                                {.tls = false, .authentication = true})
                  .empty());
}

TEST(Exposure, LoopbackNeedsNoGuard) {
  EXPECT_TRUE(exposure_warnings(listening_on("127.0.0.1:50051"), {}).empty());
}

TEST(Exposure, MetricsBeyondLoopbackAreWarnedAboutEvenWithTls) {
  v1::ServerConfig config = listening_on("127.0.0.1:50051");
  config.set_metrics_port(9464);
  EXPECT_TRUE(exposure_warnings(config, {.tls = true, .authentication = false}).empty());
  config.set_metrics_host("0.0.0.0");
  const auto warnings = exposure_warnings(config, {.tls = true, .authentication = false});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(mentions(warnings, "exposed metrics endpoint host=0.0.0.0 port=9464"));
  EXPECT_TRUE(mentions(warnings, "plain HTTP"));
  config.set_metrics_port(0);  // off: nothing listens
  EXPECT_TRUE(exposure_warnings(config, {}).empty());
}

}  // namespace
}  // namespace svdserve
