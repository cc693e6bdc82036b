// Many ReconstructStream calls at once, over real gRPC, are held to the server's shared stream
// budget (server/stream_budget.hpp): clients that send and do not read make the server stop
// reading their requests once the streams together hold their share of the compute queue,
// instead of admitting every item and refusing the overflow with RESOURCE_EXHAUSTED. Once the
// clients read, every item is answered, in order, and the budget is all given back.

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
constexpr std::size_t kAnswerBytes = 512 * 512 * 3 * sizeof(float);

class StreamBudgetTest : public ServerFixture {};

using Stream = grpc::ClientReaderWriter<v1::ReconstructRequest, v1::ReconstructStreamResponse>;

struct Call {
  grpc::ClientContext context;
  std::unique_ptr<Stream> stream;
};

TEST_F(StreamBudgetTest, ManyStreamsThatDoNotReadWaitInsteadOfFillingTheQueue) {
  v1::ServerConfig config = test_config();
  config.set_queue_capacity(32);  // the streams' share: 16 answers
  start(config);
  auto decomposed = client_->decompose(read_test_image("baboon.jpg"), kMaxRank, "baboon.jpg");
  ASSERT_TRUE(decomposed.ok()) << decomposed.status().error_message();
  const StreamBudget& budget = server_->stream_budget();
  ASSERT_EQ(budget.max_answers(), 16u);

  // 8 streams of 40 requests: 320 items against a queue of 32, each stream under its own limits
  // (64 answers, 64 MiB). Without the shared budget most of them were refused.
  constexpr int kStreams = 8;
  constexpr int kRequests = 40;
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
      ASSERT_TRUE(call->stream->Write(request));
    }
    calls.push_back(std::move(call));
  }

  // What the server holds once it has done all it will without the clients reading: the same
  // number of answers for 300 ms.
  uint64_t held = 0;
  for (auto quiet_since = std::chrono::steady_clock::now(), give_up = quiet_since + 20s;
       std::chrono::steady_clock::now() < give_up;) {
    std::this_thread::sleep_for(20ms);
    const uint64_t now_held = budget.answers();
    if (now_held != held) {
      held = now_held;
      quiet_since = std::chrono::steady_clock::now();
    } else if (held > 0 && std::chrono::steady_clock::now() - quiet_since > 300ms) {
      break;
    }
  }
  EXPECT_GE(held, static_cast<uint64_t>(kStreams)) << "every stream holds at least one answer";
  // The budget, passed by at most one answer per stream (check and take are not one step).
  EXPECT_LE(held, budget.max_answers() + kStreams);
  EXPECT_LE(budget.bytes(), held * kAnswerBytes);

  for (int s = 0; s < kStreams; ++s) {
    Stream& stream = *calls[s]->stream;
    ASSERT_TRUE(stream.WritesDone());
    v1::ReconstructStreamResponse answer;
    int received = 0;
    while (stream.Read(&answer)) {
      ASSERT_EQ(answer.status().code(), 0)
          << "stream " << s << " item " << received << ": " << answer.status().message();
      EXPECT_EQ(answer.result().rank(), static_cast<uint32_t>(1 + received % 2));
      EXPECT_EQ(answer.result().pixels().size(), kAnswerBytes);
      ++received;
    }
    const grpc::Status status = stream.Finish();
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(received, kRequests) << "stream " << s;
  }
  EXPECT_EQ(budget.answers(), 0u);
  EXPECT_EQ(budget.bytes(), 0u);
}

}  // namespace
}  // namespace svdserve::testing
