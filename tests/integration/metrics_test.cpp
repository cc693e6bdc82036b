// /metrics over real HTTP: the numbers move as requests are made.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>

#include "process.hpp"
#include "server_fixture.hpp"

namespace svdserve::testing {
namespace {

std::string http_get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return {};
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) response.append(buffer, n);
  close(fd);
  return response;
}

// The value of the first sample line matching `series` exactly (name plus labels), or -1.
double sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

using MetricsTest = ServerFixture;

TEST_F(MetricsTest, ScrapedNumbersMoveWithRequests) {
  v1::ServerConfig config = test_config();
  config.set_metrics_port(static_cast<uint32_t>(free_port()));
  start(config);
  const int port = server_->metrics_port();
  ASSERT_GT(port, 0);

  const std::string before = http_get(port, "/metrics");
  ASSERT_NE(before.find("200 OK"), std::string::npos) << before;
  EXPECT_EQ(sample(before, "svdserve_images_resident"), 0);
  EXPECT_EQ(sample(before, R"(svdserve_requests_total{code="OK",method="Decompose"})"), -1);

  ASSERT_TRUE(client_->decompose(read_test_image("home.jpg"), 16, "home").ok());
  ASSERT_TRUE(client_->reconstruct("home", Rank{4}).ok());
  ASSERT_TRUE(client_->reconstruct("home", Rank{8}).ok());
  EXPECT_FALSE(client_->reconstruct("home", Rank{99}).ok());

  const std::string after = http_get(port, "/metrics");
  EXPECT_EQ(sample(after, R"(svdserve_requests_total{code="OK",method="Decompose"})"), 1);
  EXPECT_EQ(sample(after, R"(svdserve_requests_total{code="OK",method="Reconstruct"})"), 2);
  EXPECT_EQ(sample(after, R"(svdserve_requests_total{code="INVALID_ARGUMENT",method="Reconstruct"})"), 1);
  EXPECT_EQ(sample(after, "svdserve_images_resident"), 1);
  EXPECT_GT(sample(after, "svdserve_bytes_resident"), 0);
  EXPECT_GT(sample(after, "svdserve_memory_budget_bytes"), 0);
  EXPECT_EQ(sample(after, R"(svdserve_stage_duration_seconds_count{stage="compute"})"), 3);
  EXPECT_EQ(sample(after, R"(svdserve_stage_duration_seconds_count{stage="decode"})"), 1);
  EXPECT_GE(sample(after, "svdserve_batch_size_count"), 2);
  EXPECT_EQ(sample(after, R"(svdserve_queue_depth{queue="decode"})"), 0);
  // Each good Reconstruct took one response buffer from the pool.
  EXPECT_EQ(sample(after, R"(svdserve_host_buffers_total{source="allocated"})") +
                sample(after, R"(svdserve_host_buffers_total{source="reused"})"),
            2);
  EXPECT_EQ(sample(after, R"(svdserve_host_buffers_total{source="fallback"})"), 0);
  EXPECT_EQ(sample(after, R"(svdserve_host_buffer_pool_bytes{state="capacity"})"), 256 << 20);
  EXPECT_GT(sample(after, R"(svdserve_host_buffer_pool_bytes{state="pooled"})"), 0);
  // The streams' shared budget: half the queue (256) and half the pool; no stream is open.
  EXPECT_EQ(sample(after, R"(svdserve_stream_requests_computing{state="budget"})"), 128);
  EXPECT_EQ(sample(after, R"(svdserve_stream_unwritten_bytes{state="budget"})"), 128 << 20);
  EXPECT_EQ(sample(after, R"(svdserve_stream_requests_computing{state="held"})"), 0);
  EXPECT_EQ(sample(after, R"(svdserve_stream_unwritten_bytes{state="held"})"), 0);
}

}  // namespace
}  // namespace svdserve::testing
