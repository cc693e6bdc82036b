// The zero-copy Reconstruct path over real gRPC: Reconstruct and ReconstructStream (raw methods
// answering with the pool buffer itself) give what the same item gives through ReconstructBatch
// (protobuf messages), malformed request bytes are refused, and every pool buffer comes back:
// reused while serving, ordinary memory beyond the cap, none left out after cancelled calls and
// shutdown.

#include <gtest/gtest.h>
#include <grpcpp/generic/generic_stub.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "server_fixture.hpp"

namespace svdserve::testing {
namespace {

using namespace std::chrono_literals;

constexpr uint32_t kMaxRank = 32;
// Real images: colour photos, an RGBA PNG and a grey one.
const char* const kImages[] = {"baboon.jpg", "fruits.jpg", "gradient.png", "pic1.png"};

v1::ReconstructRequest request_for(const std::string& id, RankChoice rank,
                                   v1::OutputFormat format) {
  v1::ReconstructRequest request;
  request.set_id(id);
  set_rank_choice(request, rank);
  request.set_format(format);
  return request;
}

int max_level_difference(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return 256;
  int worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<int>(static_cast<uint8_t>(a[i])) -
                                     static_cast<int>(static_cast<uint8_t>(b[i]))));
  }
  return worst;
}

double max_f32_difference(const std::string& a, const std::string& b) {
  std::vector<float> x(a.size() / sizeof(float));
  std::vector<float> y(b.size() / sizeof(float));
  std::memcpy(x.data(), a.data(), x.size() * sizeof(float));
  std::memcpy(y.data(), b.data(), y.size() * sizeof(float));
  double worst = 0;
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(x[i] - y[i])));
  }
  return worst;
}

class ZeroCopyTest : public ServerFixture {
 protected:
  void decompose(const std::string& image) {
    auto answer = client_->decompose(read_test_image(image), kMaxRank, image);
    ASSERT_TRUE(answer.ok()) << answer.status().error_message();
  }

  // The same request through ReconstructBatch, where the response is a protobuf message.
  v1::ReconstructResponse through_batch(const v1::ReconstructRequest& request) {
    v1::ReconstructBatchRequest batch;
    *batch.add_items() = request;
    auto answer = client_->reconstruct_batch(batch);
    EXPECT_TRUE(answer.ok()) << answer.status().error_message();
    if (!answer.ok() || answer->items_size() != 1) return {};
    EXPECT_EQ(answer->items(0).status().code(), 0) << answer->items(0).status().message();
    return answer->items(0).result();
  }

  // Every field but the timings, and the pixels byte for byte.
  static void expect_same_answer(const v1::ReconstructResponse& expected,
                                 const v1::ReconstructResponse& actual) {
    EXPECT_EQ(actual.id(), expected.id());
    EXPECT_EQ(actual.shape().width(), expected.shape().width());
    EXPECT_EQ(actual.shape().height(), expected.shape().height());
    EXPECT_EQ(actual.shape().channels(), expected.shape().channels());
    EXPECT_EQ(actual.rank(), expected.rank());
    EXPECT_EQ(actual.relative_error(), expected.relative_error());
    EXPECT_EQ(actual.format(), expected.format());
    EXPECT_EQ(actual.pixels().size(), expected.pixels().size());
    EXPECT_TRUE(actual.pixels() == expected.pixels()) << "pixels differ";
    EXPECT_TRUE(actual.has_timings());
    EXPECT_EQ(actual.timings().batch_size(), expected.timings().batch_size());
  }

  // After a drain, every buffer lent for a response has come back.
  void expect_all_returned_after_shutdown() {
    server_->shutdown();
    const HostBufferPoolStats stats = server_->host_buffer_stats();
    EXPECT_EQ(stats.in_use_bytes, 0u);
    EXPECT_LE(stats.pooled_bytes, stats.capacity_bytes);
  }
};

TEST_F(ZeroCopyTest, ReconstructAnswersExactlyAsReconstructBatch) {
  start();
  for (const char* image : kImages) decompose(image);
  for (const char* image : kImages) {
    for (const v1::OutputFormat format :
         {v1::OUTPUT_FORMAT_RAW_U8, v1::OUTPUT_FORMAT_RAW_F32, v1::OUTPUT_FORMAT_PNG}) {
      for (const RankChoice rank : {RankChoice{Rank{1}}, RankChoice{Rank{12}},
                                    RankChoice{Rank{kMaxRank}}, RankChoice{EnergyFraction{0.9}}}) {
        const v1::ReconstructRequest request = request_for(image, rank, format);
        SCOPED_TRACE(request.ShortDebugString());
        auto single = client_->reconstruct(request);
        ASSERT_TRUE(single.ok()) << single.status().error_message();
        const v1::ReconstructResponse batch = through_batch(request);
        expect_same_answer(batch, *single);
        if (format != v1::OUTPUT_FORMAT_PNG) {
          const std::size_t value_bytes = format == v1::OUTPUT_FORMAT_RAW_F32 ? sizeof(float) : 1;
          EXPECT_EQ(single->pixels().size(), std::size_t{single->shape().width()} *
                                                 single->shape().height() *
                                                 single->shape().channels() * value_bytes);
        }
      }
    }
  }
  const HostBufferPoolStats stats = server_->host_buffer_stats();
  EXPECT_GT(stats.reuses, 0u);
  EXPECT_EQ(stats.fallbacks, 0u);
  expect_all_returned_after_shutdown();
}

// ReconstructStream is raw too: its answers, in request order, are the batch's, and an item
// that fails (an unknown id) answers with its status while the stream goes on. The stream's
// items are batched together (the batch's one at a time), and the CPU backend's sums depend on
// the batch, so pixels are compared within one level (u8) or 1e-3 (f32) instead of exactly.
TEST_F(ZeroCopyTest, ReconstructStreamAnswersAsReconstructBatch) {
  start();
  for (const char* image : kImages) decompose(image);
  std::vector<v1::ReconstructRequest> requests;
  for (const char* image : kImages) {
    for (const v1::OutputFormat format : {v1::OUTPUT_FORMAT_RAW_U8, v1::OUTPUT_FORMAT_RAW_F32}) {
      requests.push_back(request_for(image, Rank{kMaxRank / 2}, format));
    }
    requests.push_back(request_for(image, EnergyFraction{0.9}, v1::OUTPUT_FORMAT_RAW_U8));
  }
  const std::size_t unknown = 2;
  requests.insert(requests.begin() + unknown,
                  request_for("no-such-image", Rank{4}, v1::OUTPUT_FORMAT_RAW_U8));

  auto streamed = client_->reconstruct_stream(requests);
  ASSERT_TRUE(streamed.ok()) << streamed.status().error_message();
  ASSERT_EQ(streamed->size(), requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE(requests[i].ShortDebugString());
    const v1::ReconstructStreamResponse& answer = (*streamed)[i];
    if (i == unknown) {
      EXPECT_EQ(answer.status().code(), grpc::StatusCode::NOT_FOUND);
      EXPECT_NE(answer.status().message().find("no-such-image"), std::string::npos)
          << answer.status().message();
      EXPECT_FALSE(answer.has_result());
      continue;
    }
    ASSERT_EQ(answer.status().code(), 0) << answer.status().message();
    const v1::ReconstructResponse expected = through_batch(requests[i]);
    const v1::ReconstructResponse& actual = answer.result();
    EXPECT_EQ(actual.id(), expected.id());
    EXPECT_EQ(actual.rank(), expected.rank());
    EXPECT_EQ(actual.format(), expected.format());
    EXPECT_EQ(actual.shape().ShortDebugString(), expected.shape().ShortDebugString());
    EXPECT_NEAR(actual.relative_error(), expected.relative_error(), 1e-6);
    ASSERT_EQ(actual.pixels().size(), expected.pixels().size());
    if (actual.format() == v1::OUTPUT_FORMAT_RAW_U8) {
      EXPECT_LE(max_level_difference(actual.pixels(), expected.pixels()), 1);
    } else {
      EXPECT_LE(max_f32_difference(actual.pixels(), expected.pixels()), 1e-3);
    }
  }
  const HostBufferPoolStats stats = server_->host_buffer_stats();
  EXPECT_GT(stats.reuses + stats.allocations, 0u) << "the stream's pixels did not use the pool";
  EXPECT_EQ(stats.fallbacks, 0u);
  expect_all_returned_after_shutdown();
}

// A client that sends many requests and reads nothing: the stream stops reading requests once
// it holds 64 unwritten answers, finished or not, so what waits for the client stays bounded;
// once the client reads, every answer comes, in order.
TEST_F(ZeroCopyTest, AStreamThatIsNotReadHoldsABoundedNumberOfAnswers) {
  start();
  decompose("baboon.jpg");
  constexpr std::size_t kAnswerBytes = 512 * 512 * 3;  // baboon.jpg as RAW_U8
  constexpr std::size_t kHeldAtMost = 64 + 4;  // the stream's limit, and a few being sent
  constexpr int kRequests = 300;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 60s);
  const auto stream = client_->stub().ReconstructStream(&context);
  for (int i = 0; i < kRequests; ++i) {
    const auto rank = Rank{static_cast<uint32_t>(1 + i % 2)};
    ASSERT_TRUE(stream->Write(request_for("baboon.jpg", rank, v1::OUTPUT_FORMAT_RAW_U8)));
  }
  // Until the server has done what it will do without the client reading: the stream has
  // stopped reading requests and every request it read is computed.
  ASSERT_TRUE(server_->stream_budget().wait_until(
      [](const StreamBudgetSample& s) { return s.waiting_streams == 1 && s.computing == 0; },
      30s))
      << "the stream never stopped reading";
  const std::size_t held = server_->host_buffer_stats().in_use_bytes;
  EXPECT_GT(held, 0u) << "no answer is waiting: the test did not hold the stream up";
  EXPECT_LE(held, kHeldAtMost * kAnswerBytes) << held / kAnswerBytes << " answers held";

  ASSERT_TRUE(stream->WritesDone());
  v1::ReconstructStreamResponse answer;
  int received = 0;
  while (stream->Read(&answer)) {
    ASSERT_EQ(answer.status().code(), 0) << answer.status().message();
    EXPECT_EQ(answer.result().rank(), static_cast<uint32_t>(1 + received % 2)) << received;
    EXPECT_EQ(answer.result().pixels().size(), kAnswerBytes);
    ++received;
  }
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(received, kRequests);
  expect_all_returned_after_shutdown();
}

TEST_F(ZeroCopyTest, MalformedRequestBytesAreInvalidArgumentAndTheServerGoesOn) {
  start();
  decompose("baboon.jpg");
  grpc::GenericStub stub(client_->channel());
  // Field 1 (id) says 5 bytes follow, 2 do.
  const std::string truncated("\x0a\x05" "ab", 4);
  // Field 1 with wire type 7, which does not exist.
  const std::string bad_wire_type("\x0f\x01", 2);
  for (const std::string& bytes : {truncated, bad_wire_type}) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 30s);
    const grpc::Slice slice(bytes);
    const grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, "/svdserve.v1.SvdServe/Reconstruct", grpc::StubOptions(), &request,
                   &response, [&](grpc::Status status) { done.set_value(std::move(status)); });
    const grpc::Status status = done.get_future().get();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_NE(status.error_message().find("ReconstructRequest"), std::string::npos)
        << status.error_message();
  }
  auto good = client_->reconstruct("baboon.jpg", Rank{4});
  EXPECT_TRUE(good.ok()) << good.status().error_message();
  expect_all_returned_after_shutdown();
}

// On the stream, malformed bytes fail that item only: INVALID_ARGUMENT in its answer, and the
// next request on the same stream is answered.
TEST_F(ZeroCopyTest, MalformedBytesOnTheStreamFailOnlyThatItem) {
  start();
  decompose("baboon.jpg");
  // Writes its messages one after another, then reads as many answers (the server answers in
  // request order).
  class RawStream final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    explicit RawStream(std::vector<grpc::ByteBuffer> requests)
        : requests_(std::move(requests)), answers_(requests_.size()) {}
    void start() {
      StartWrite(&requests_[0]);
      StartRead(&answers_[0]);
      StartCall();
    }
    void OnWriteDone(bool ok) override {
      if (ok && ++written_ < requests_.size()) {
        StartWrite(&requests_[written_]);
      } else {
        StartWritesDone();
      }
    }
    void OnReadDone(bool ok) override {
      if (ok && ++read_ < answers_.size()) StartRead(&answers_[read_]);
    }
    void OnDone(const grpc::Status& status) override { done_.set_value(status); }
    grpc::Status wait() { return done_.get_future().get(); }
    [[nodiscard]] std::size_t read() const { return read_; }
    [[nodiscard]] const grpc::ByteBuffer& answer(std::size_t i) const { return answers_[i]; }

   private:
    std::vector<grpc::ByteBuffer> requests_;
    std::vector<grpc::ByteBuffer> answers_;
    std::size_t written_ = 0;
    std::size_t read_ = 0;
    std::promise<grpc::Status> done_;
  };
  const auto bytes_of = [](const std::string& text) {
    const grpc::Slice slice(text);
    return grpc::ByteBuffer(&slice, 1);
  };
  const std::string truncated("\x0a\x05" "ab", 4);  // field 1 says 5 bytes follow, 2 do
  std::vector<grpc::ByteBuffer> requests;
  requests.push_back(bytes_of(truncated));
  requests.push_back(
      bytes_of(request_for("baboon.jpg", Rank{4}, v1::OUTPUT_FORMAT_RAW_U8).SerializeAsString()));

  grpc::GenericStub stub(client_->channel());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 30s);
  RawStream stream(std::move(requests));
  stub.PrepareBidiStreamingCall(&context, "/svdserve.v1.SvdServe/ReconstructStream",
                                grpc::StubOptions(), &stream);
  stream.start();
  const grpc::Status status = stream.wait();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(stream.read(), 2u);
  const auto parse = [](const grpc::ByteBuffer& bytes) {
    std::vector<grpc::Slice> slices;
    EXPECT_TRUE(bytes.Dump(&slices).ok());
    std::string joined;
    for (const grpc::Slice& slice : slices) {
      joined.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
    v1::ReconstructStreamResponse response;
    EXPECT_TRUE(response.ParseFromString(joined));
    return response;
  };
  const v1::ReconstructStreamResponse bad = parse(stream.answer(0));
  EXPECT_EQ(bad.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad.status().message().find("ReconstructRequest"), std::string::npos)
      << bad.status().message();
  const v1::ReconstructStreamResponse good = parse(stream.answer(1));
  EXPECT_EQ(good.status().code(), 0) << good.status().message();
  EXPECT_EQ(good.result().rank(), 4u);
  EXPECT_EQ(good.result().pixels().size(), 512u * 512u * 3u);
  expect_all_returned_after_shutdown();
}

// A cap below one image: every response comes from ordinary memory and is still right.
TEST_F(ZeroCopyTest, BeyondThePoolCapResponsesUseOrdinaryMemory) {
  v1::ServerConfig config = test_config();
  config.set_host_buffer_pool_bytes(1024);
  start(config);
  decompose("fruits.jpg");
  constexpr int kCalls = 4;
  for (int i = 0; i < kCalls; ++i) {
    const v1::ReconstructRequest request =
        request_for("fruits.jpg", Rank{static_cast<uint32_t>(5 + i)}, v1::OUTPUT_FORMAT_RAW_U8);
    auto single = client_->reconstruct(request);
    ASSERT_TRUE(single.ok()) << single.status().error_message();
    expect_same_answer(through_batch(request), *single);
  }
  const HostBufferPoolStats stats = server_->host_buffer_stats();
  EXPECT_EQ(stats.fallbacks, static_cast<uint64_t>(kCalls));
  EXPECT_EQ(stats.allocations, 0u);
  EXPECT_EQ(stats.pooled_bytes, 0u);
  expect_all_returned_after_shutdown();
}

// Concurrent calls against a cap of two images: the pool never holds more, and the calls it
// cannot serve get ordinary memory instead of an error.
TEST_F(ZeroCopyTest, ConcurrentCallsStayUnderThePoolCap) {
  v1::ServerConfig config = test_config();
  const std::size_t image_bytes = 512 * 512 * 3;  // baboon.jpg as RAW_U8
  config.set_host_buffer_pool_bytes(2 * image_bytes);
  start(config);
  decompose("baboon.jpg");
  const auto expected = client_->reconstruct("baboon.jpg", Rank{9});
  ASSERT_TRUE(expected.ok());
  ASSERT_EQ(expected->pixels().size(), image_bytes);

  constexpr int kThreads = 6;
  constexpr int kCallsEach = 5;
  std::atomic<int> failures{0};
  std::atomic<bool> over_cap{false};
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kCallsEach; ++i) {
          auto answer = client_->reconstruct("baboon.jpg", Rank{9});
          // Batched with others, a value may round the other way (the CPU backend's row
          // bands follow the batch size): one grey level. A reused buffer still being sent
          // would show as far more.
          if (!answer.ok() || max_level_difference(answer->pixels(), expected->pixels()) > 1) {
            failures += 1;
          }
          const HostBufferPoolStats stats = server_->host_buffer_stats();
          if (stats.pooled_bytes > stats.capacity_bytes) over_cap = true;
        }
      });
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_FALSE(over_cap);
  const HostBufferPoolStats stats = server_->host_buffer_stats();
  EXPECT_LE(stats.allocations, 2u);
  EXPECT_EQ(stats.allocations + stats.reuses + stats.fallbacks,
            static_cast<uint64_t>(kThreads * kCallsEach + 1));
  expect_all_returned_after_shutdown();
}

// Calls that die at every stage (deadline before, during or after the work; cancelled by the
// client at random moments) leave no buffer behind, and the server keeps answering.
TEST_F(ZeroCopyTest, CancelledAndExpiredCallsGiveEveryBufferBack) {
  start();
  decompose("baboon.jpg");
  constexpr int kCalls = 60;
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> delay_us(0, 8000);
  std::vector<std::jthread> calls;
  std::atomic<int> ended{0};
  for (int i = 0; i < kCalls; ++i) {
    const auto wait = std::chrono::microseconds(delay_us(random));
    const bool cancel = i % 2 == 0;
    calls.emplace_back([&, wait, cancel] {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + (cancel ? 30s : wait));
      v1::ReconstructRequest request = request_for("baboon.jpg", Rank{16}, v1::OUTPUT_FORMAT_RAW_U8);
      v1::ReconstructResponse response;
      std::jthread canceller;
      if (cancel) {
        canceller = std::jthread([&context, wait] {
          std::this_thread::sleep_for(wait);
          context.TryCancel();
        });
      }
      (void)client_->stub().Reconstruct(&context, request, &response);
      ended += 1;
    });
  }
  calls.clear();  // joins
  EXPECT_EQ(ended, kCalls);
  auto good = client_->reconstruct("baboon.jpg", Rank{4});
  EXPECT_TRUE(good.ok()) << good.status().error_message();
  expect_all_returned_after_shutdown();
}

}  // namespace
}  // namespace svdserve::testing
