// /metrics over real HTTP: the numbers move as requests are made.

#include <gtest/gtest.h>

#include <chrono>

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
  // The streams' shared budget, half the queue (256), and the unsent bytes of all calls, as much
  // as the pool; every response is sent.
  EXPECT_EQ(sample(after, R"(svdserve_stream_requests_computing{state="budget"})"), 128);
  EXPECT_EQ(sample(after, R"(svdserve_stream_requests_computing{state="held"})"), 0);
  EXPECT_EQ(sample(after, "svdserve_unsent_bytes_budget"), 256 << 20);
  EXPECT_EQ(sample(after, "svdserve_unsent_bytes"), 0);
  EXPECT_EQ(sample(after, "svdserve_calls_waiting_for_unsent_bytes"), 0);
}

}  // namespace
}  // namespace svdserve::testing
