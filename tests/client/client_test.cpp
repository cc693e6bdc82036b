// svdserve::Client against the in-process fake server: calls, statuses, the stream, health,
// message size limits.

#include "client/client.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "fake_server.hpp"

namespace svdserve {
namespace {

class ClientTest : public ::testing::Test {
 protected:
  testing::FakeServer server_;
  Client client_{server_.address()};
};

TEST_F(ClientTest, DecomposeThenReconstruct) {
  const auto decomposed = client_.decompose("6x4x3", 5, "cat");
  ASSERT_TRUE(decomposed.ok()) << decomposed.status().error_message();
  EXPECT_EQ(decomposed->id(), "cat");
  EXPECT_EQ(decomposed->rank_kept(), 5u);

  const auto reconstructed = client_.reconstruct("cat", Rank{3});
  ASSERT_TRUE(reconstructed.ok());
  EXPECT_EQ(reconstructed->rank(), 3u);
  EXPECT_EQ(reconstructed->pixels(), std::string(6 * 4 * 3, '\3'));

  const auto by_energy = client_.reconstruct("cat", EnergyFraction{0.9}, v1::OUTPUT_FORMAT_PNG);
  ASSERT_TRUE(by_energy.ok());
  EXPECT_EQ(by_energy->rank(), 5u);
}

TEST_F(ClientTest, FailedCallsCarryTheServerStatus) {
  const auto missing = client_.reconstruct("nope", Rank{1});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(missing.status().error_message(), "no image 'nope'");
  EXPECT_THROW(static_cast<void>(missing.value()), BadCallResultAccess);

  const auto undecodable = client_.decompose("not an image");
  EXPECT_EQ(undecodable.status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ClientTest, UnimplementedMethodsSayUnimplemented) {
  EXPECT_EQ(client_.stats().status().error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(client_.start_profiling().error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(ClientTest, StreamAnswersEveryRequestInOrder) {
  ASSERT_TRUE(client_.decompose("8x8x1", 0, "a").ok());
  ASSERT_TRUE(client_.decompose("8x8x3", 0, "b").ok());
  std::vector<v1::ReconstructRequest> requests;
  constexpr std::uint32_t kRequests = 200;
  for (std::uint32_t i = 0; i < kRequests; ++i) {
    v1::ReconstructRequest request;
    request.set_id(i % 7 == 3 ? "missing" : (i % 2 == 0 ? "a" : "b"));
    request.set_rank(1 + i % testing::FakeSvdServe::kFullRank);
    requests.push_back(request);
  }
  const auto responses = client_.reconstruct_stream(requests);
  ASSERT_TRUE(responses.ok()) << responses.status().error_message();
  ASSERT_EQ(responses->size(), requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& response = (*responses)[i];
    if (requests[i].id() == "missing") {
      EXPECT_EQ(response.status().code(), static_cast<int>(grpc::StatusCode::NOT_FOUND)) << i;
    } else {
      EXPECT_EQ(response.status().code(), 0) << i;
      EXPECT_EQ(response.result().id(), requests[i].id()) << i;
      EXPECT_EQ(response.result().rank(), requests[i].rank()) << i;
    }
  }
}

TEST_F(ClientTest, EmptyStreamIsFine) {
  const auto responses = client_.reconstruct_stream(std::span<const v1::ReconstructRequest>{});
  ASSERT_TRUE(responses.ok());
  EXPECT_TRUE(responses->empty());
}

TEST_F(ClientTest, StoreCalls) {
  ASSERT_TRUE(client_.decompose("2x2x1", 0, "x").ok());
  const auto info = client_.get_image("x", true);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->info().rank_kept(), testing::FakeSvdServe::kFullRank);
  EXPECT_EQ(info->singular_values_size(), 1);
  const auto list = client_.list_images();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->images_size(), 1);
  EXPECT_TRUE(client_.delete_image("x").ok());
  EXPECT_EQ(client_.delete_image("x").status().error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ClientTest, HealthIsServing) {
  const auto health = client_.health();
  ASSERT_TRUE(health.ok()) << health.status().error_message();
  EXPECT_EQ(*health, HealthStatus::serving);
  EXPECT_EQ(health_status_name(*health), "SERVING");
}

TEST_F(ClientTest, HealthFollowsTheServer) {
  server_.server().GetHealthCheckService()->SetServingStatus(false);
  const auto health = client_.health();
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(*health, HealthStatus::not_serving);
  EXPECT_EQ(client_.health("no.such.Service").status().error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ClientTest, ResponsesLargerThanTheReceiveLimitFail) {
  constexpr int kSmallLimit = 4096;
  Client small(server_.address(), ClientOptions{.max_receive_message_bytes = kSmallLimit});
  ASSERT_TRUE(small.decompose("100x100x3", 0, "big").ok());  // A small request, a 30 kB answer:
  EXPECT_EQ(small.reconstruct("big", Rank{1}).status().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(small.reconstruct("big", Rank{1}, v1::OUTPUT_FORMAT_PNG).ok());
}

TEST_F(ClientTest, CallsAboutOneImageNameItInTheRoutingHeader) {
  const auto& fake = server_.service();
  ASSERT_TRUE(client_.decompose("6x4x3", 0, "my cat.png").ok());
  EXPECT_EQ(fake.routing_header("Decompose"), "my%20cat.png");
  ASSERT_TRUE(client_.reconstruct("my cat.png", Rank{2}).ok());
  EXPECT_EQ(fake.routing_header("Reconstruct"), "my%20cat.png");
  ASSERT_TRUE(client_.get_image("my cat.png").ok());
  EXPECT_EQ(fake.routing_header("GetImage"), "my%20cat.png");

  v1::ReconstructProgressiveRequest progressive;
  progressive.set_id("my cat.png");
  progressive.add_ranks(1);
  progressive.add_ranks(3);
  const auto steps = client_.reconstruct_progressive(progressive);
  ASSERT_TRUE(steps.ok()) << steps.status().error_message();
  EXPECT_EQ(steps->size(), 2u);
  EXPECT_EQ(fake.routing_header("ReconstructProgressive"), "my%20cat.png");

  ASSERT_TRUE(client_.decompose("6x4x1", 0, "dog").ok());
  v1::ReconstructBatchRequest batch;
  batch.add_items()->set_id("dog");
  batch.add_items()->set_id("my cat.png");
  for (auto& item : *batch.mutable_items()) item.set_rank(1);
  ASSERT_TRUE(client_.reconstruct_batch(batch).ok());
  EXPECT_EQ(fake.routing_header("ReconstructBatch"), "dog");  // The first item's id.

  std::vector<v1::ReconstructRequest> stream(2);
  stream[0].set_id("my cat.png");
  stream[1].set_id("dog");
  for (auto& request : stream) request.set_rank(1);
  ASSERT_TRUE(client_.reconstruct_stream(stream).ok());
  EXPECT_EQ(fake.routing_header("ReconstructStream"), "my%20cat.png");  // The first request's id.

  ASSERT_TRUE(client_.delete_image("dog").ok());
  EXPECT_EQ(fake.routing_header("DeleteImage"), "dog");
}

TEST_F(ClientTest, CallsWithoutAnIdSendNoRoutingHeader) {
  const auto& fake = server_.service();
  ASSERT_TRUE(client_.decompose("6x4x3").ok());  // The server names it.
  EXPECT_EQ(fake.routing_header("Decompose"), std::nullopt);
  ASSERT_TRUE(client_.list_images().ok());
  EXPECT_EQ(fake.routing_header("ListImages"), std::nullopt);
  ASSERT_TRUE(client_.reconstruct_batch(v1::ReconstructBatchRequest{}).ok());
  EXPECT_EQ(fake.routing_header("ReconstructBatch"), std::nullopt);
}

TEST_F(ClientTest, WaitsForAConnection) { EXPECT_TRUE(client_.wait_for_connected(std::chrono::seconds(5))); }

TEST(ClientWithoutServer, FailsFastWithUnavailable) {
  const Client client("127.0.0.1:1");
  EXPECT_EQ(client.server_info().status().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(client.health().status().error_code(), grpc::StatusCode::UNAVAILABLE);
  std::vector<v1::ReconstructRequest> requests(3);
  EXPECT_EQ(client.reconstruct_stream(requests).status().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(ClientWithoutServer, WaitForReadyRunsIntoTheDeadline) {
  const Client client("127.0.0.1:1", ClientOptions{.timeout = std::chrono::milliseconds(200), .wait_for_ready = true});
  EXPECT_EQ(client.server_info().status().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

}  // namespace
}  // namespace svdserve
