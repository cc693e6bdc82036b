// Many ReconstructStream calls at once, over real gRPC, are held to the server's budget for
// response bytes not yet sent (server/grpc/unsent_bytes_budget.hpp): clients that send and do not
// read make their streams wait in line for bytes once the answers held fill the budget, instead
// of admitting every item (and refusing what overflows the compute queue with
// RESOURCE_EXHAUSTED). Once the clients read, every item is answered, in order; cancelled or
// shut down, the streams give the whole budget back.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "server_fixture.hpp"

namespace svdserve::testing {
namespace {

using namespace std::chrono_literals;

constexpr uint32_t kMaxRank = 8;
// baboon.jpg as RAW_F32: 3 MiB, so that a stream's answers are far more than gRPC's flow-control
// windows can take in while the client does not read.
constexpr uint64_t kAnswerBytes = 512 * 512 * 3 * sizeof(float);
constexpr int kStreams = 4;
constexpr int kRequests = 40;  // 160 items against a queue of 32
// How long a test waits for the server to reach a state; a failure, not a hang, if it does not.
constexpr auto kPatience = 30s;

using Stream = grpc::ClientReaderWriter<v1::ReconstructRequest, v1::ReconstructStreamResponse>;

struct Call {
  grpc::ClientContext context;
  std::unique_ptr<Stream> stream;
};

class StreamBudgetTest : public ServerFixture {
 protected:
  // Queue 32 (16 requests computing for the streams) and a pool of 32 MiB (as many bytes of
  // unsent answers, about 10): each stream alone may hold 64 answers or 64 MiB.
  void start_small() {
    v1::ServerConfig config = test_config();
    config.set_queue_capacity(32);
    config.set_host_buffer_pool_bytes(32u << 20);
    config.set_drain_timeout_ms(500);
    start(config);
    auto decomposed = client_->decompose(read_test_image("baboon.jpg"), kMaxRank, "baboon.jpg");
    ASSERT_TRUE(decomposed.ok()) << decomposed.status().error_message();
  }

  // kStreams streams that each send kRequests requests and read nothing (yet).
  std::vector<std::unique_ptr<Call>> open_streams() {
    std::vector<std::unique_ptr<Call>> calls;
    for (int s = 0; s < kStreams; ++s) {
      auto call = std::make_unique<Call>();
      call->context.set_deadline(std::chrono::system_clock::now() + 120s);
      call->stream = client_->stub().ReconstructStream(&call->context);
      for (int i = 0; i < kRequests; ++i) {
        v1::ReconstructRequest request;
        request.set_id("baboon.jpg");
        request.set_rank(static_cast<uint32_t>(1 + i % 2));
        request.set_format(v1::OUTPUT_FORMAT_RAW_F32);
        EXPECT_TRUE(call->stream->Write(request));
      }
      calls.push_back(std::move(call));
    }
    return calls;
  }

  // What the streams hold once the server has done all it will without the clients reading:
  // every stream waits in line for the bytes of its next answer and nothing is computing, so
  // nothing moves until a client reads.
  UnsentBytesSample settled() const {
    const bool reached = server_->unsent_bytes().wait_until(
        [](const UnsentBytesSample& s) {
          return s.waiting_calls == static_cast<uint64_t>(kStreams);
        },
        kPatience);
    EXPECT_TRUE(reached) << "the streams never all waited for bytes";
    EXPECT_TRUE(server_->stream_budget().wait_until(
        [](const StreamBudgetSample& s) { return s.computing == 0; }, kPatience));
    return server_->unsent_bytes().sample();
  }

  void expect_budget_given_back() const {
    EXPECT_TRUE(server_->unsent_bytes().wait_until(
        [](const UnsentBytesSample& s) { return s.held_bytes == 0 && s.waiting_calls == 0; },
        kPatience))
        << server_->unsent_bytes().sample().held_bytes << " bytes still held";
    const StreamBudgetSample after = server_->stream_budget().sample();
    EXPECT_EQ(after.computing, 0u);
    EXPECT_EQ(after.waiting_streams, 0u);
  }
};

TEST_F(StreamBudgetTest, StreamsThatDoNotReadWaitAtTheBudgetThenAnswerEverything) {
  start_small();
  auto calls = open_streams();
  const UnsentBytesSample held = settled();
  EXPECT_EQ(held.budget_bytes, 32u << 20);
  // The streams hold answers up to the budget (more than one each: 4 answers are 12 MiB), and
  // never past it. Without it each stream would hold up to 64 MiB, and items past the queue's 32
  // would be refused.
  EXPECT_GT(held.held_bytes + kAnswerBytes, held.budget_bytes);
  EXPECT_LE(held.held_bytes, held.budget_bytes);

  // Each stream read on its own thread, as a client must: one left unread would hold bytes the
  // others wait for.
  std::vector<std::jthread> readers;
  for (int s = 0; s < kStreams; ++s) {
    readers.emplace_back([&calls, s] {
      Stream& stream = *calls[s]->stream;
      EXPECT_TRUE(stream.WritesDone());
      v1::ReconstructStreamResponse answer;
      int received = 0;
      while (stream.Read(&answer)) {
        EXPECT_EQ(answer.status().code(), 0)
            << "stream " << s << " item " << received << ": " << answer.status().message();
        EXPECT_EQ(answer.result().rank(), static_cast<uint32_t>(1 + received % 2));
        EXPECT_EQ(answer.result().pixels().size(), kAnswerBytes);
        ++received;
      }
      const grpc::Status status = stream.Finish();
      EXPECT_TRUE(status.ok()) << status.error_message();
      EXPECT_EQ(received, kRequests) << "stream " << s;
    });
  }
  readers.clear();  // joins
  expect_budget_given_back();
}

TEST_F(StreamBudgetTest, CancelledStreamsGiveTheBudgetBack) {
  start_small();
  auto calls = open_streams();
  EXPECT_GT(settled().held_bytes, 0u);
  for (auto& call : calls) call->context.TryCancel();
  for (auto& call : calls) {
    v1::ReconstructStreamResponse answer;
    while (call->stream->Read(&answer)) {
    }
    EXPECT_EQ(call->stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // The server learns of the cancellations on its own threads.
  expect_budget_given_back();
}

TEST_F(StreamBudgetTest, ShutdownWithWaitingStreamsGivesTheBudgetBack) {
  start_small();
  auto calls = open_streams();
  EXPECT_GT(settled().held_bytes, 0u);
  server_->shutdown();  // drains for 500 ms, then cancels what is left
  expect_budget_given_back();
  for (auto& call : calls) {
    v1::ReconstructStreamResponse answer;
    while (call->stream->Read(&answer)) {
    }
    (void)call->stream->Finish();
  }
}

}  // namespace
}  // namespace svdserve::testing
