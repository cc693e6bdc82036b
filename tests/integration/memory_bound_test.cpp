// What the server holds for slow, hostile or oversized requests, measured on the real svdserve
// binary (VmRSS and VmHWM of its process): every call lives inside the server-wide budget for
// response bytes not yet sent, however its client behaves.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "raw_http2.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kMiB = 1024 * 1024;
// How long a test waits for the server to reach a state; a failure, not a hang, if it does not.
constexpr auto kPatience = 60s;

// baboon.jpg (512x512 RGB) as RAW_F32: 3 MiB an answer.
constexpr uint64_t kAnswerBytes = 512 * 512 * 3 * sizeof(float);
constexpr uint32_t kMaxRank = 100;

// Small limits, so that a few hostile clients are many times the budget.
v1::ServerConfig small_server_config() {
  v1::ServerConfig config;
  config.set_worker_threads(2);
  config.set_loader_threads(1);
  config.set_encoder_threads(1);
  config.set_cpu_compute_threads(2);
  config.set_max_queue_delay_us(200);
  config.set_host_buffer_pool_bytes(32 * kMiB);
  config.set_drain_timeout_ms(500);
  config.set_log_level("warn");
  return config;
}

v1::ReconstructRequest raw_f32_request(const std::string& id, uint32_t rank) {
  v1::ReconstructRequest request;
  request.set_id(id);
  request.set_rank(rank);
  request.set_format(v1::OUTPUT_FORMAT_RAW_F32);
  return request;
}

// A 256-byte id, the longest the server takes, for each i below a million; in the order of i.
std::string long_id(int i) {
  std::string number = std::to_string(i);
  number.insert(0, 6 - number.size(), '0');
  return std::string(256 - number.size(), 'x') + number;
}

// Decomposes `count` one-pixel RGB images with ids long_id(0..count-1), from several clients at
// once; returns how many failed.
int decompose_tiny_images(const ServerProcess& server, int count) {
  constexpr int kClients = 4;
  std::atomic<int> next{0};
  std::atomic<int> failed{0};
  std::vector<std::jthread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      const auto client = server.new_client();
      v1::DecomposeRequest request;
      v1::RawImage* raw = request.mutable_image()->mutable_raw();
      raw->set_width(1);
      raw->set_height(1);
      raw->set_channels(3);
      raw->set_type(v1::PIXEL_TYPE_U8);
      raw->set_data(std::string("\x10\x80\xf0", 3));
      for (int i = next++; i < count; i = next++) {
        request.set_id(long_id(i));
        if (!client->decompose(request).ok()) ++failed;
      }
    });
  }
  clients.clear();  // joins
  return failed.load();
}

// A call whose client writes and never reads.
struct HostileCall {
  std::unique_ptr<Client> client;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::ReconstructRequest, v1::ReconstructStreamResponse>>
      stream;
  std::unique_ptr<grpc::ClientReader<v1::ReconstructResponse>> progressive;
};

class MemoryBoundTest : public ::testing::Test {
 protected:
  void start(v1::ServerConfig config) {
    server_ = std::make_unique<ServerProcess>(std::move(config));
    ASSERT_TRUE(server_->serving());
    client_ = server_->new_client();
  }

  void TearDown() override {
    client_.reset();
    if (server_) {
      const ProcessResult stopped = server_->stop();
      EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
    }
  }

  [[nodiscard]] double metric(const std::string& series) const {
    return metric_sample(server_->metrics(), series);
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(MemoryBoundTest, ClientsThatNeverReadStayWithinTheUnsentBytesBudget) {
  const v1::ServerConfig config = small_server_config();
  start(config);
  const uint64_t budget = config.host_buffer_pool_bytes();
  ASSERT_TRUE(client_->decompose(read_test_image("baboon.jpg"), kMaxRank, "baboon").ok());
  ASSERT_TRUE(client_->reconstruct(raw_f32_request("baboon", 1)).ok());  // warms the pool
  const ProcessMemory before = server_->memory();

  // 24 streams of 8 requests each and one progressive call of 100 ranks, each on a connection of
  // its own, none reading: 2.9 GiB of answers asked for, 3 MiB each.
  constexpr int kStreams = 24;
  constexpr uint32_t kStreamRequests = 8;
  std::vector<std::unique_ptr<HostileCall>> hostile;
  for (int s = 0; s < kStreams; ++s) {
    auto call = std::make_unique<HostileCall>();
    call->client = server_->new_client();
    call->stream = call->client->stub().ReconstructStream(&call->context);
    for (uint32_t i = 0; i < kStreamRequests; ++i) {
      ASSERT_TRUE(call->stream->Write(raw_f32_request("baboon", 1 + i)));
    }
    hostile.push_back(std::move(call));
  }
  {
    auto call = std::make_unique<HostileCall>();
    call->client = server_->new_client();
    v1::ReconstructProgressiveRequest request;
    request.set_id("baboon");
    for (uint32_t rank = 1; rank <= kMaxRank; ++rank) request.add_ranks(rank);
    request.set_format(v1::OUTPUT_FORMAT_RAW_F32);
    call->progressive = call->client->stub().ReconstructProgressive(&call->context, request);
    hostile.push_back(std::move(call));
  }

  // Settled: nothing computing, calls waiting in line, and no room for another answer. (A client
  // takes in some answers before its flow-control windows close: those calls wait for nothing.)
  ASSERT_TRUE(eventually(
      [&] {
        const std::string text = server_->metrics();
        return metric_sample(text, "svdserve_jobs_in_flight") == 0 &&
               metric_sample(text, "svdserve_calls_waiting_for_unsent_bytes") >= 1 &&
               metric_sample(text, "svdserve_unsent_bytes") + 2.0 * kAnswerBytes >
                   static_cast<double>(budget);
      },
      kPatience))
      << server_->metrics();
  const double waiting_hostile = metric("svdserve_calls_waiting_for_unsent_bytes");
  EXPECT_LE(metric("svdserve_unsent_bytes"), static_cast<double>(budget));

  // The answers held (at most the budget), the pool's idle buffers (at most its capacity, the
  // same number here) and a margin for gRPC's own buffers and the allocator.
  constexpr uint64_t kMarginBytes = 32 * kMiB;
  const ProcessMemory held = server_->memory();
  const uint64_t growth = held.peak_rss_bytes - before.rss_bytes;
  RecordProperty("peak_rss_growth_mib", std::to_string(growth / kMiB));
  EXPECT_LE(growth, budget + config.host_buffer_pool_bytes() + kMarginBytes)
      << "peak RSS grew by " << growth / kMiB << " MiB from " << before.rss_bytes / kMiB << " MiB";

  // Other clients are served: calls that send no pixels at once, and a reconstruction as soon as
  // the hostile calls give their bytes back.
  const auto other = server_->new_client();
  EXPECT_TRUE(other->stats().ok());
  EXPECT_TRUE(other->decompose(read_test_image("pic1.png"), 8, "pic1").ok());
  auto waiting = std::async(std::launch::async,
                            [&] { return other->reconstruct("pic1", Rank{4}).status(); });
  EXPECT_TRUE(eventually(
      [&] { return metric("svdserve_calls_waiting_for_unsent_bytes") > waiting_hostile; },
      kPatience))
      << "a reconstruction did not wait for the budget";
  EXPECT_EQ(waiting.wait_for(0s), std::future_status::timeout);
  for (auto& call : hostile) call->context.TryCancel();
  const grpc::Status served = waiting.get();
  EXPECT_TRUE(served.ok()) << served.error_message();
  EXPECT_TRUE(eventually(
      [&] {
        const std::string text = server_->metrics();
        return metric_sample(text, "svdserve_unsent_bytes") == 0 &&
               metric_sample(text, "svdserve_calls_waiting_for_unsent_bytes") == 0;
      },
      kPatience))
      << server_->metrics();
  for (auto& call : hostile) {
    if (call->stream) (void)call->stream->Finish();
    if (call->progressive) (void)call->progressive->Finish();
  }
}

// A batch whose answer cannot fit in one message is refused from the items' shapes and formats,
// before any reconstruction: no answer is built only to be thrown away at the send.
TEST_F(MemoryBoundTest, ABatchWhoseAnswerCannotFitIsRefusedBeforeAnyWork) {
  const v1::ServerConfig config = small_server_config();
  start(config);
  ASSERT_TRUE(client_->decompose(read_test_image("baboon.jpg"), kMaxRank, "baboon").ok());
  const ProcessMemory before = server_->memory();
  const std::string computed = R"(svdserve_stage_duration_seconds_count{stage="compute"})";
  const double computed_before = metric(computed);

  // 256 answers of 3 MiB: 768 MiB against the 64 MiB message limit.
  constexpr int kItems = 256;
  v1::ReconstructBatchRequest request;
  for (int i = 0; i < kItems; ++i) {
    *request.add_items() = raw_f32_request("baboon", 1 + static_cast<uint32_t>(i) % kMaxRank);
  }
  // The whole call within its deadline: refused, not built until time runs out.
  const auto bounded = server_->new_client(20s);
  const auto asked = std::chrono::steady_clock::now();
  const auto refused = bounded->reconstruct_batch(request);
  RecordProperty("refused_after_ms",
                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - asked)
                                    .count()));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << refused.status().error_message();
  const std::string message = refused.status().error_message();
  EXPECT_NE(message.find("max_message_bytes"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(kItems) + " items"), std::string::npos) << message;
  EXPECT_EQ(metric(computed), computed_before) << "a reconstruction ran";
  const uint64_t growth = server_->memory().peak_rss_bytes - before.rss_bytes;
  RecordProperty("peak_rss_growth_mib", std::to_string(growth / kMiB));
  EXPECT_LE(growth, 32 * kMiB) << "peak RSS grew by " << growth / kMiB << " MiB";

  // A batch that fits is answered.
  request.mutable_items()->DeleteSubrange(4, kItems - 4);
  const auto answered = bounded->reconstruct_batch(request);
  ASSERT_TRUE(answered.ok()) << answered.status().error_message();
  for (const auto& item : answered->items()) {
    EXPECT_EQ(item.status().code(), 0) << item.status().message();
    EXPECT_EQ(item.result().pixels().size(), kAnswerBytes);
  }
}

// PNG sizes are known only once encoded: a batch of them stops when its answer passes the
// message limit, rather than building the rest.
TEST_F(MemoryBoundTest, ABatchOfPngsStopsAtTheMessageLimit) {
  v1::ServerConfig config = small_server_config();
  config.set_max_message_bytes(4 * kMiB);
  config.set_max_image_bytes(4 * kMiB);
  start(config);
  ASSERT_TRUE(client_->decompose(read_test_image("baboon.jpg"), kMaxRank, "baboon").ok());

  // About 500 KB a PNG at rank 100: 40 of them are 20 MB against a 4 MiB limit, while each
  // one's raw size (768 KiB) fits.
  constexpr int kItems = 40;
  v1::ReconstructBatchRequest request;
  for (int i = 0; i < kItems; ++i) {
    v1::ReconstructRequest* item = request.add_items();
    item->set_id("baboon");
    item->set_rank(kMaxRank);
    item->set_format(v1::OUTPUT_FORMAT_PNG);
  }
  const auto refused = client_->reconstruct_batch(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << refused.status().error_message();
  EXPECT_NE(refused.status().error_message().find("max_message_bytes"), std::string::npos)
      << refused.status().error_message();

  request.mutable_items()->DeleteSubrange(2, kItems - 2);
  const auto answered = client_->reconstruct_batch(request);
  ASSERT_TRUE(answered.ok()) << answered.status().error_message();
  EXPECT_EQ(answered->items_size(), 2);
}

// The memory budget counts what an image holds in the server's memory besides its factors (its
// entry in the store, its id), so that many tiny images are evicted like a few large ones.
TEST_F(MemoryBoundTest, ManyTinyImagesStayWithinTheMemoryBudget) {
  v1::ServerConfig config = small_server_config();
  config.set_memory_budget_bytes(16 * kMiB);
  start(config);
  const ProcessMemory before = server_->memory();

  constexpr int kImages = 40'000;  // 12 bytes of factors each, 256 bytes of id
  ASSERT_EQ(decompose_tiny_images(*server_, kImages), 0);
  const auto stats = client_->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_LE(stats->bytes_resident(), config.memory_budget_bytes());
  EXPECT_LT(stats->images_resident(), static_cast<uint64_t>(kImages)) << "nothing was evicted";
  EXPECT_GT(stats->evictions(), 0u);

  // The budget, and a margin for the allocator and the evicted ids the store remembers.
  constexpr uint64_t kMarginBytes = 16 * kMiB;
  const uint64_t growth = server_->memory().peak_rss_bytes - before.rss_bytes;
  RecordProperty("peak_rss_growth_mib", std::to_string(growth / kMiB));
  RecordProperty("images_resident", std::to_string(stats->images_resident()));
  RecordProperty("bytes_resident", std::to_string(stats->bytes_resident()));
  EXPECT_LE(growth, config.memory_budget_bytes() + kMarginBytes)
      << "peak RSS grew by " << growth / kMiB << " MiB for " << stats->images_resident()
      << " images counted as " << stats->bytes_resident() << " bytes";
}

// ListImages answers pages, however many images there are; svdserve-cli list follows them.
TEST_F(MemoryBoundTest, ListingMoreImagesThanOneMessageHoldsGoesPageByPage) {
  v1::ServerConfig config = small_server_config();
  config.set_max_message_bytes(4 * kMiB);
  config.set_max_image_bytes(4 * kMiB);
  config.set_memory_budget_bytes(256 * kMiB);
  start(config);
  constexpr int kImages = 20'000;  // about 300 bytes of ImageInfo each: 6 MB in all
  ASSERT_EQ(decompose_tiny_images(*server_, kImages), 0);

  const auto first = client_->list_images();
  ASSERT_TRUE(first.ok()) << first.status().error_message();
  EXPECT_EQ(first->images_size(), 1000);
  EXPECT_EQ(first->images(0).id(), long_id(0));
  EXPECT_FALSE(first->next_page_token().empty());

  const ProcessResult listed = run_process(
      svdserve::test::cli_binary(), {"--server", server_->address(), "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find(std::to_string(kImages) + " images"), std::string::npos)
      << listed.out.substr(listed.out.size() - std::min<std::size_t>(listed.out.size(), 200));
  EXPECT_NE(listed.out.find(long_id(kImages - 1)), std::string::npos);
}

// Echo answers count against the unsent-bytes budget too: clients that never open their HTTP/2
// flow-control window pin no more than the budget, however many calls they open.
TEST_F(MemoryBoundTest, ZeroWindowClientsPinningEchoAnswersStayWithinTheBudget) {
  const v1::ServerConfig config = small_server_config();
  start(config);
  const uint64_t budget = config.host_buffer_pool_bytes();
  const ProcessMemory before = server_->memory();

  // Two connections of 40 calls for 4 MiB each: 320 MiB of answers that can never be sent.
  constexpr int kConnections = 2;
  constexpr uint32_t kCalls = 40;
  constexpr uint64_t kEchoBytes = 4 * kMiB;
  v1::EchoRequest echo;
  echo.set_response_bytes(kEchoBytes);
  std::vector<std::unique_ptr<RawHttp2Connection>> connections;
  for (int c = 0; c < kConnections; ++c) {
    connections.push_back(std::make_unique<RawHttp2Connection>(server_->port(), 0));
    for (uint32_t call = 0; call < kCalls; ++call) {
      connections.back()->unary_call(1 + 2 * call, "/svdserve.v1.SvdServe/Echo",
                                     echo.SerializeAsString());
    }
  }
  // Settled: calls wait in line, and no room is left for another answer (held twice: the
  // message and its serialized copy).
  ASSERT_TRUE(eventually(
      [&] {
        const std::string text = server_->metrics();
        return metric_sample(text, "svdserve_calls_waiting_for_unsent_bytes") >= 1 &&
               metric_sample(text, "svdserve_unsent_bytes") + 2.0 * kEchoBytes >
                   static_cast<double>(budget);
      },
      kPatience))
      << server_->metrics();

  constexpr uint64_t kMarginBytes = 32 * kMiB;
  const uint64_t growth = server_->memory().peak_rss_bytes - before.rss_bytes;
  RecordProperty("peak_rss_growth_mib", std::to_string(growth / kMiB));
  EXPECT_LE(growth, budget + kMarginBytes) << "peak RSS grew by " << growth / kMiB << " MiB";
  EXPECT_TRUE(server_->new_client()->stats().ok()) << "the server stopped answering";
}

}  // namespace
}  // namespace svdserve::testing
