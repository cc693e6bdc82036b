// The gRPC transport's limits from the config (max_concurrent_streams, max_connection_idle_ms,
// keepalive_time_ms), as a bare HTTP/2 client sees them on the real svdserve binary.

#include <gtest/gtest.h>

#include <chrono>

#include "raw_http2.hpp"
#include "server_process.hpp"

namespace svdserve::testing {
namespace {

using namespace std::chrono_literals;

// How long a test waits for the server to act; a failure, not a hang, if it does not.
constexpr auto kPatience = 30s;
constexpr uint32_t kDefaultWindowBytes = 65535;

v1::ServerConfig quiet_config() {
  v1::ServerConfig config;
  config.set_worker_threads(1);
  config.set_loader_threads(1);
  config.set_encoder_threads(1);
  config.set_cpu_compute_threads(1);
  config.set_drain_timeout_ms(500);
  config.set_log_level("warn");
  return config;
}

std::string echo_request(uint64_t response_bytes) {
  v1::EchoRequest request;
  request.set_response_bytes(response_bytes);
  return request.SerializeAsString();
}

TEST(TransportLimitsTest, EachConnectionIsToldTheLimitOnCallsAtOnce) {
  v1::ServerConfig config = quiet_config();
  config.set_max_concurrent_streams(7);
  ServerProcess server(config);
  ASSERT_TRUE(server.serving());
  RawHttp2Connection connection(server.port(), kDefaultWindowBytes);
  EXPECT_EQ(connection.server_setting(kHttp2MaxConcurrentStreams, kPatience), 7u);
}

TEST(TransportLimitsTest, AConnectionWithoutCallsIsClosedAfterTheIdleLimit) {
  v1::ServerConfig config = quiet_config();
  config.set_max_connection_idle_ms(300);
  ServerProcess server(config);
  ASSERT_TRUE(server.serving());
  RawHttp2Connection connection(server.port(), kDefaultWindowBytes);
  const auto goaway = connection.read_until(
      [](const Http2Frame& frame) { return frame.type == kHttp2GoAway; }, kPatience);
  EXPECT_TRUE(goaway) << "the idle connection was not closed";
}

// A call the client does not let the server answer (its window stays shut) keeps the connection
// busy: the server pings it at the keepalive time, to learn whether anyone is there.
TEST(TransportLimitsTest, AClientWithACallOpenIsPingedAtTheKeepaliveTime) {
  v1::ServerConfig config = quiet_config();
  config.set_keepalive_time_ms(200);
  config.set_keepalive_timeout_ms(100);
  ServerProcess server(config);
  ASSERT_TRUE(server.serving());
  RawHttp2Connection connection(server.port(), 0);
  connection.unary_call(1, "/svdserve.v1.SvdServe/Echo", echo_request(1 << 20));
  // Three pings: gRPC also pings once when data arrives, to measure the connection.
  int pings = 0;
  const auto third = connection.read_until(
      [&pings](const Http2Frame& frame) {
        return frame.type == kHttp2Ping && !(frame.flags & kHttp2Ack) && ++pings == 3;
      },
      kPatience);
  EXPECT_TRUE(third) << pings << " pings";
}

}  // namespace
}  // namespace svdserve::testing
