// Workloads and measured runs against the in-process fake server (fake_server.hpp): what each
// op sends, what its probe measures, and what a run reports.

#include "client/loadgen/workload.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "client/loadgen/echo_sizing.hpp"
#include "fake_server.hpp"

namespace svdserve::loadgen {
namespace {

class WorkloadTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(client_.decompose("6x4x3", 0, "cat").ok()); }

  static v1::ReconstructRequest reconstruct_of(const std::string& id, std::uint32_t rank) {
    v1::ReconstructRequest request;
    request.set_id(id);
    request.set_rank(rank);
    return request;
  }

  testing::FakeServer server_;
  Client client_{server_.address()};
  ClientPool pool_{server_.address(), ClientOptions{}, 2};
  RunLength twelve_requests_{.count = 12};
};

TEST_F(WorkloadTest, ReconstructSendsItsRequestAndProbesTheAnswerSize) {
  const auto request = reconstruct_of("cat", 2);
  const Workload workload = reconstruct_workload(request);
  EXPECT_EQ(workload.op, "reconstruct");
  EXPECT_EQ(workload.request_wire, request.SerializeAsString());
  const auto probed = workload.probe(client_);
  ASSERT_TRUE(probed.ok());
  EXPECT_EQ(*probed, client_.reconstruct(request)->ByteSizeLong());
  EXPECT_TRUE(workload.call(client_, 0).ok());
  EXPECT_EQ(reconstruct_workload(reconstruct_of("missing", 2)).call(client_, 0).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(WorkloadTest, StreamStatusIsTheFirstFailedItems) {
  const std::vector<v1::ReconstructRequest> good(3, reconstruct_of("cat", 2));
  EXPECT_TRUE(stream_status(client_, good).ok());
  const std::vector<v1::ReconstructRequest> mixed = {reconstruct_of("cat", 2), reconstruct_of("missing", 2),
                                                     reconstruct_of("cat", 99)};
  const grpc::Status status = stream_status(client_, mixed);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "no image 'missing'");
}

TEST_F(WorkloadTest, StreamRunCountsItsItemsPerRequest) {
  const Workload workload = stream_workload(reconstruct_of("cat", 2), 4);
  EXPECT_EQ(workload.op, "stream");
  EXPECT_EQ(workload.images_per_call, 4u);
  BenchReport given;
  given.server = "fake";
  const BenchReport report = measure(workload, pool_, 3, twelve_requests_, given);
  EXPECT_EQ(report.op, "stream");
  EXPECT_EQ(report.server, "fake");  // What the caller gave is kept.
  EXPECT_EQ(report.requests, 12u);
  EXPECT_EQ(report.succeeded, 12u);
  EXPECT_EQ(report.images_per_request, 4u);
  EXPECT_EQ(report.concurrency, 3u);
  EXPECT_EQ(report.connections, 2u);  // Three callers share the pool's two connections.
  EXPECT_EQ(report.latency.count, 12u);
  EXPECT_GT(report.elapsed_s, 0.0);
  EXPECT_DOUBLE_EQ(report.images_per_second(), 48.0 / report.elapsed_s);
}

TEST_F(WorkloadTest, FailedCallsAreCountedByCode) {
  const BenchReport report = measure(reconstruct_workload(reconstruct_of("cat", 99)), pool_, 2, twelve_requests_, {});
  EXPECT_EQ(report.requests, 12u);
  EXPECT_EQ(report.succeeded, 0u);
  EXPECT_EQ(report.errors.at("INVALID_ARGUMENT"), 12u);
  EXPECT_EQ(report.unreachable, 0u);
  EXPECT_EQ(report.latency.count, 0u);
}

TEST_F(WorkloadTest, DecomposeCallersKeepToTheirOwnIds) {
  std::vector<v1::DecomposeRequest> requests(2);
  for (std::size_t c = 0; c < requests.size(); ++c) {
    requests[c].mutable_image()->set_encoded("4x4x1");
    requests[c].set_id("load-" + std::to_string(c));
  }
  const Workload workload = decompose_workload(requests);
  EXPECT_EQ(workload.request_wire, requests.front().SerializeAsString());
  ASSERT_TRUE(workload.call(client_, 0).ok());
  ASSERT_TRUE(workload.call(client_, 3).ok());  // Callers beyond the ids wrap around: load-1.
  EXPECT_TRUE(client_.get_image("load-0").ok());
  EXPECT_TRUE(client_.get_image("load-1").ok());
  const BenchReport report = measure(workload, pool_, 4, twelve_requests_, {});
  EXPECT_EQ(report.succeeded, 12u);
  EXPECT_EQ(server_.service().image_count(), 3u);  // cat, load-0 and load-1, however many calls.
}

TEST_F(WorkloadTest, EchoCopiesTheSizesOfTheRealCall) {
  Workload real = reconstruct_workload(reconstruct_of("cat", 2));
  real.response_bytes = *real.probe(client_);
  const Workload echo = echo_workload_like(real, real.response_bytes);
  EXPECT_EQ(echo.op, "echo");
  EXPECT_FALSE(echo.probe);
  EXPECT_LE(echo.request_wire.size(), real.request_wire.size());
  EXPECT_GE(echo.request_wire.size() + 1, real.request_wire.size());
  EXPECT_LE(echo.response_bytes, real.response_bytes);
  EXPECT_GE(echo.response_bytes + 1, real.response_bytes);

  const BenchReport report = measure(echo, pool_, 3, twelve_requests_, {});
  EXPECT_EQ(report.succeeded, 12u);
  EXPECT_EQ(report.request_bytes, echo.request_wire.size());
  EXPECT_EQ(report.response_bytes, echo.response_bytes);
  EXPECT_EQ(server_.service().echo_calls(), 12u);
}

TEST_F(WorkloadTest, WarmupCallsAreSentButNotReported) {
  const RunLength with_warmup{.count = 5, .warmup = 7};
  const BenchReport report = measure(echo_workload_like(reconstruct_workload(reconstruct_of("cat", 1)), 10), pool_,
                                     1, with_warmup, {});
  EXPECT_EQ(report.requests, 5u);
  EXPECT_EQ(server_.service().echo_calls(), 12u);
}

TEST_F(WorkloadTest, CreatedImagesAreDeletedAtTheEnd) {
  {
    CreatedImages created(client_);
    ASSERT_TRUE(client_.decompose("2x2x1", 0, "temporary").ok());
    created.add("temporary");
    created.add("never-made");  // Deleting what is not there is no error.
    EXPECT_EQ(server_.service().image_count(), 2u);
  }
  EXPECT_EQ(server_.service().image_count(), 1u);
  EXPECT_TRUE(client_.get_image("cat").ok());
}

}  // namespace
}  // namespace svdserve::loadgen
