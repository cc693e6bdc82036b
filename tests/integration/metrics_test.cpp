// /metrics over real HTTP: the numbers move as requests are made.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <regex>

#include "process.hpp"
#include "server_fixture.hpp"

namespace svdserve::testing {
namespace {

// How long a scrape may wait for its answer before the test gives up on it.
constexpr timeval kScrapeTimeout{5, 0};

// A socket connected to the loopback port, or -1.
int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string http_get(int port, const std::string& path) {
  const int fd = connect_loopback(port);
  if (fd < 0) return {};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &kScrapeTimeout, sizeof(kScrapeTimeout));
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

// Sends `request` a byte at a time, one every `interval` (each wait also watches for the server
// closing the connection) until the server closes it or `give_up` passes. Returns the time from
// the first byte to the close; `give_up` when the server never closed it.
std::chrono::milliseconds trickle_until_closed(int fd, const std::string& request,
                                               std::chrono::milliseconds interval,
                                               std::chrono::milliseconds give_up) {
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; std::chrono::steady_clock::now() - start < give_up; ++i) {
    (void)send(fd, &request[i % request.size()], 1, MSG_NOSIGNAL);
    pollfd readable{fd, POLLIN, 0};
    if (poll(&readable, 1, static_cast<int>(interval.count())) > 0) {
      char buffer[256];
      if (recv(fd, buffer, sizeof(buffer), 0) <= 0) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start);
      }
    }
  }
  return give_up;
}

// A client that sends its request head a byte at a time, each byte in time for any per-read
// timeout: other scrapes are answered meanwhile, and the endpoint closes the connection once
// the request head's deadline passes.
TEST_F(MetricsTest, SlowClientDelaysNoScrapeAndIsCutOffAtTheDeadline) {
  constexpr std::chrono::milliseconds kRequestHeadDeadline(2000);  // the endpoint's
  constexpr std::chrono::milliseconds kInterval(500);
  constexpr std::chrono::milliseconds kSlack(2000);
  constexpr std::chrono::milliseconds kGiveUp(15000);
  v1::ServerConfig config = test_config();
  config.set_metrics_port(static_cast<uint32_t>(free_port()));
  start(config);
  const int port = server_->metrics_port();
  const int slow = connect_loopback(port);
  ASSERT_GE(slow, 0);
  std::atomic<bool> slow_closed{false};
  auto trickle = std::async(std::launch::async, [&] {
    const auto closed_after = trickle_until_closed(slow, "GET /metrics HTTP/1.0\r\nX-Slow: ",
                                                   kInterval, kGiveUp);
    slow_closed.store(true);
    return closed_after;
  });

  const std::string scraped = http_get(port, "/metrics");
  const bool slow_still_open = !slow_closed.load();
  EXPECT_NE(scraped.find("200 OK"), std::string::npos) << "scrape answered: '" << scraped << "'";
  EXPECT_TRUE(slow_still_open) << "the scrape was answered only once the slow client was gone";

  const std::chrono::milliseconds closed_after = trickle.get();
  close(slow);
  EXPECT_LT(closed_after, kRequestHeadDeadline + kSlack) << "the slow connection was kept open";
}

}  // namespace
}  // namespace svdserve::testing
