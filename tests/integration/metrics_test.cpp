// /metrics over real HTTP: the numbers move as requests are made.

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <vector>

#include "process.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace svdserve::testing {
namespace {

double sample(const std::string& text, const std::string& series) {
  return metric_sample(text, series);
}

using MetricsTest = ServerFixture;

TEST_F(MetricsTest, ScrapedNumbersMoveWithRequests) {
  v1::ServerConfig config = test_config();
  config.set_metrics_port(static_cast<uint32_t>(free_port()));
  config.set_queue_capacity(200);  // not the default: the gauges below follow the config
  start(config);
  const int port = server_->metrics_port();
  ASSERT_GT(port, 0);

  const std::string before = http_get(port, "/metrics");
  ASSERT_NE(before.find("200 OK"), std::string::npos) << before;
  EXPECT_EQ(sample(before, "svdserve_images_resident"), 0);
  // Every series a user will see is there from the start, at zero, so that rates over it are
  // defined before its first event.
  for (const char* method : {"Decompose", "Reconstruct", "ReconstructStream", "ListImages", "Echo"}) {
    for (const char* code : {"OK", "INVALID_ARGUMENT", "NOT_FOUND", "RESOURCE_EXHAUSTED",
                             "UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED", "INTERNAL"}) {
      const std::string series = std::string("svdserve_requests_total{code=\"") + code +
                                 "\",method=\"" + method + "\"}";
      EXPECT_EQ(sample(before, series), 0) << series;
    }
  }
  EXPECT_EQ(sample(before, R"(svdserve_items_total{code="NOT_FOUND",method="ReconstructStream"})"),
            0);
  EXPECT_EQ(sample(before, R"(svdserve_items_total{code="OK",method="ReconstructBatch"})"), 0);
  EXPECT_EQ(sample(before,
                   R"(svdserve_stage_duration_seconds_count{method="Compress",stage="encode"})"),
            0);

  ASSERT_TRUE(client_->decompose(read_test_image("home.jpg"), 16, "home").ok());
  ASSERT_TRUE(client_->reconstruct("home", Rank{4}).ok());
  ASSERT_TRUE(client_->reconstruct("home", Rank{8}).ok());
  EXPECT_FALSE(client_->reconstruct("home", Rank{99}).ok());

  // A call's bytes come back when gRPC is done sending, which may be after its client has read.
  EXPECT_TRUE(server_->unsent_bytes().wait_until(
      [](const UnsentBytesSample& s) { return s.held_bytes == 0; }, std::chrono::seconds(30)));
  const std::string after = http_get(port, "/metrics");
  EXPECT_EQ(sample(after, R"(svdserve_requests_total{code="OK",method="Decompose"})"), 1);
  EXPECT_EQ(sample(after, R"(svdserve_requests_total{code="OK",method="Reconstruct"})"), 2);
  EXPECT_EQ(sample(after, R"(svdserve_requests_total{code="INVALID_ARGUMENT",method="Reconstruct"})"), 1);
  EXPECT_EQ(sample(after, "svdserve_images_resident"), 1);
  EXPECT_GT(sample(after, "svdserve_bytes_resident"), 0);
  EXPECT_GT(sample(after, "svdserve_memory_budget_bytes"), 0);
  // Stage latency by the method whose job it was.
  EXPECT_EQ(sample(after, R"(svdserve_stage_duration_seconds_count{method="Decompose",stage="compute"})"), 1);
  EXPECT_EQ(sample(after, R"(svdserve_stage_duration_seconds_count{method="Decompose",stage="decode"})"), 1);
  EXPECT_EQ(sample(after, R"(svdserve_stage_duration_seconds_count{method="Reconstruct",stage="compute"})"), 2);
  EXPECT_EQ(sample(after, R"(svdserve_stage_duration_seconds_count{method="Reconstruct",stage="decode"})"), 0);
  EXPECT_GE(sample(after, "svdserve_batch_size_count"), 2);
  EXPECT_EQ(sample(after, R"(svdserve_queue_depth{queue="decode"})"), 0);
  EXPECT_EQ(sample(after, R"(svdserve_queue_capacity{queue="decode"})"), 200);
  EXPECT_EQ(sample(after, R"(svdserve_queue_capacity{queue="compute"})"), 200);
  // Each good Reconstruct took one response buffer from the pool.
  EXPECT_EQ(sample(after, R"(svdserve_host_buffers_total{source="allocated"})") +
                sample(after, R"(svdserve_host_buffers_total{source="reused"})"),
            2);
  EXPECT_EQ(sample(after, R"(svdserve_host_buffers_total{source="fallback"})"), 0);
  // Limits are gauges of their own: a sum over a usage gauge's labels is a usage.
  EXPECT_EQ(sample(after, "svdserve_host_buffer_pool_capacity_bytes"), 256 << 20);
  EXPECT_EQ(sample(after, R"(svdserve_host_buffer_pool_bytes{state="capacity"})"), -1);
  EXPECT_GT(sample(after, R"(svdserve_host_buffer_pool_bytes{state="pooled"})"), 0);
  // The streams' shared budget, half the queue (200), and the unsent bytes of all calls, as much
  // as the pool; every response is sent.
  EXPECT_EQ(sample(after, "svdserve_stream_requests_computing_budget"), 100);
  EXPECT_EQ(sample(after, "svdserve_stream_requests_computing"), 0);
  EXPECT_EQ(sample(after, "svdserve_unsent_bytes_budget"), 256 << 20);
  EXPECT_EQ(sample(after, "svdserve_unsent_bytes"), 0);
  EXPECT_EQ(sample(after, "svdserve_calls_waiting_for_unsent_bytes"), 0);
}

// An item that fails inside a ReconstructStream or a ReconstructBatch leaves its call OK: it is
// counted by its own code, in /metrics and in GetStats.
TEST_F(MetricsTest, ItemsAreCountedByTheirOwnCode) {
  v1::ServerConfig config = test_config();
  config.set_metrics_port(static_cast<uint32_t>(free_port()));
  start(config);
  ASSERT_TRUE(client_->decompose(read_test_image("home.jpg"), 16, "home").ok());

  std::vector<v1::ReconstructRequest> requests(3);
  requests[0].set_id("home");
  requests[0].set_rank(4);
  requests[1].set_id("home");
  requests[1].set_rank(99);  // above the rank kept
  requests[2].set_id("nobody");
  requests[2].set_rank(1);
  ASSERT_TRUE(client_->reconstruct_stream(requests).ok());
  v1::ReconstructBatchRequest batch;
  for (const auto& request : requests) *batch.add_items() = request;
  ASSERT_TRUE(client_->reconstruct_batch(batch).ok());

  const std::string text = http_get(server_->metrics_port(), "/metrics");
  for (const char* method : {"ReconstructStream", "ReconstructBatch"}) {
    SCOPED_TRACE(method);
    const auto series = [method](const char* code) {
      return std::string("svdserve_items_total{code=\"") + code + "\",method=\"" + method +
             "\"}";
    };
    EXPECT_EQ(sample(text, series("OK")), 1);
    EXPECT_EQ(sample(text, series("INVALID_ARGUMENT")), 1);
    EXPECT_EQ(sample(text, series("NOT_FOUND")), 1);
  }

  const auto stats = client_->stats();
  ASSERT_TRUE(stats.ok());
  int stream_items = 0;
  for (const auto& method : stats->items()) {
    if (method.method() != "ReconstructStream") continue;
    for (const auto& code : method.codes()) {
      if (code.code() == "NOT_FOUND") {
        EXPECT_EQ(code.count(), 1u);
      }
    }
    stream_items = static_cast<int>(method.requests());
  }
  EXPECT_EQ(stream_items, 3);
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
