// Deadlines, cancellation, back-pressure, eviction and graceful shutdown on a real server, and
// the svdserve process itself: its port, SIGTERM, the lame duck and the drain's time limit.
// Slow work is a large random image: its CPU SVD takes long enough to hold the one worker.

#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <future>
#include <random>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "process.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"
#include "tests/client/temp_folder.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

constexpr auto kConditionTimeout = std::chrono::seconds(60);

v1::DecomposeRequest random_image(uint32_t size, std::string id, uint32_t max_rank) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> value(0, 255);
  v1::DecomposeRequest request;
  auto* raw = request.mutable_image()->mutable_raw();
  raw->set_width(size);
  raw->set_height(size);
  raw->set_channels(1);
  raw->set_type(v1::PIXEL_TYPE_U8);
  std::string data(std::size_t{size} * size, '\0');
  for (char& c : data) c = static_cast<char>(value(rng));
  raw->set_data(std::move(data));
  request.set_id(std::move(id));
  request.set_max_rank(max_rank);
  return request;
}

// Polls GetStats until pred holds (or the timeout passes); returns the last stats.
template <typename Predicate>
v1::GetStatsResponse wait_for_stats(const Client& client, Predicate pred) {
  const auto give_up = std::chrono::steady_clock::now() + kConditionTimeout;
  v1::GetStatsResponse stats;
  while (std::chrono::steady_clock::now() < give_up) {
    auto answer = client.stats();
    if (answer.ok()) {
      stats = *answer;
      if (pred(stats)) return stats;
    }
    std::this_thread::yield();
  }
  ADD_FAILURE() << "condition on GetStats not reached in time";
  return stats;
}

uint64_t compute_samples(const v1::GetStatsResponse& stats) {
  for (const auto& latency : stats.latencies()) {
    if (latency.stage() == "compute") return latency.samples();
  }
  return 0;
}

v1::ServerConfig one_worker_config() {
  v1::ServerConfig config = test_config();
  config.set_worker_threads(1);
  config.set_loader_threads(1);
  config.set_max_batch_size(1);
  return config;
}

using LifecycleTest = ServerFixture;

// A job whose deadline passes while it waits behind slow work fails DEADLINE_EXCEEDED (or
// CANCELLED, as gRPC cancels expired calls) and never reaches the backend.
TEST_F(LifecycleTest, ExpiredAndCancelledJobsNeverReachAWorker) {
  start(one_worker_config());
  std::future<CallResult<v1::DecomposeResponse>> slow =
      std::async(std::launch::async, [&] { return client_->decompose(random_image(1400, "slow", 1400)); });
  wait_for_stats(*client_, [](const auto& s) { return s.jobs_in_flight() == 1; });

  // Deadline shorter than the slow job.
  grpc::ClientContext expiring;
  expiring.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  v1::ReconstructRequest request;
  v1::DecomposeResponse ignored;
  const grpc::Status expired =
      client_->stub().Decompose(&expiring, random_image(64, "late", 8), &ignored);
  EXPECT_EQ(expired.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);

  // Cancelled by the client while queued.
  grpc::ClientContext cancelling;
  std::promise<grpc::Status> cancelled_status;
  v1::DecomposeRequest small = random_image(64, "cancelled", 8);
  client_->stub().async()->Decompose(&cancelling, &small, &ignored, [&](grpc::Status s) {
    cancelled_status.set_value(std::move(s));
  });
  wait_for_stats(*client_, [](const auto& s) { return s.jobs_in_flight() >= 2; });
  cancelling.TryCancel();
  EXPECT_EQ(cancelled_status.get_future().get().error_code(), grpc::StatusCode::CANCELLED);

  auto slow_result = slow.get();
  ASSERT_TRUE(slow_result.ok()) << slow_result.status().error_message();
  const auto stats = wait_for_stats(*client_, [](const auto& s) { return s.jobs_in_flight() == 0; });
  EXPECT_EQ(compute_samples(stats), 1u) << "only the slow job may have been computed";
  EXPECT_FALSE(client_->get_image("late").ok());
  EXPECT_FALSE(client_->get_image("cancelled").ok());
}

TEST_F(LifecycleTest, FullQueuesAnswerResourceExhaustedAndLoseNothingAdmitted) {
  v1::ServerConfig config = one_worker_config();
  config.set_queue_capacity(1);
  start(config);
  constexpr int kRequests = 24;
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < kRequests; ++i) {
    calls.push_back(std::async(std::launch::async, [&, i] {
      return client_->decompose(random_image(384, "img" + std::to_string(i), 384)).status();
    }));
  }
  int ok = 0, exhausted = 0;
  for (auto& call : calls) {
    const grpc::Status status = call.get();
    if (status.ok()) ++ok;
    else if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) ++exhausted;
    else ADD_FAILURE() << "unexpected status " << status.error_code() << " " << status.error_message();
  }
  EXPECT_GT(exhausted, 0);
  EXPECT_GT(ok, 0);
  auto listed = client_->list_images();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->images_size(), ok) << "every accepted image must be resident";
}

TEST_F(LifecycleTest, LeastRecentlyUsedImageIsEvictedToFitTheBudget) {
  v1::ServerConfig config = test_config();
  // Room for two 512x512x3 rank-16 images (196,800 bytes each) but not three.
  config.set_memory_budget_bytes(450'000);
  start(config);
  const std::string bytes = read_test_image("baboon.jpg");
  ASSERT_TRUE(client_->decompose(bytes, 16, "first").ok());
  ASSERT_TRUE(client_->decompose(bytes, 16, "second").ok());
  ASSERT_TRUE(client_->reconstruct("first", Rank{1}).ok());  // "second" is now least recent
  ASSERT_TRUE(client_->decompose(bytes, 16, "third").ok());

  auto evicted = client_->get_image("second");
  ASSERT_TRUE(evicted.ok());
  EXPECT_EQ(evicted->info().state(), v1::IMAGE_STATE_EVICTED);
  const grpc::Status gone = client_->reconstruct("second", Rank{1}).status();
  EXPECT_EQ(gone.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(gone.error_message().find("evicted"), std::string::npos);
  EXPECT_TRUE(client_->reconstruct("first", Rank{1}).ok());
  EXPECT_TRUE(client_->reconstruct("third", Rank{1}).ok());

  auto listed = client_->list_images(true);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->images_size(), 3);
  EXPECT_LE(listed->bytes_resident(), 450'000u);
  auto stats = client_->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->evictions(), 1u);
}

TEST_F(LifecycleTest, RejectPolicyKeepsResidentImages) {
  v1::ServerConfig config = test_config();
  config.set_memory_budget_bytes(450'000);
  config.set_full_store_policy(v1::FULL_STORE_POLICY_REJECT);
  start(config);
  const std::string bytes = read_test_image("baboon.jpg");
  ASSERT_TRUE(client_->decompose(bytes, 16, "first").ok());
  ASSERT_TRUE(client_->decompose(bytes, 16, "second").ok());
  const grpc::Status full = client_->decompose(bytes, 16, "third").status();
  EXPECT_EQ(full.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(full.error_message().find("budget"), std::string::npos);
  EXPECT_TRUE(client_->reconstruct("first", Rank{1}).ok());
  EXPECT_TRUE(client_->reconstruct("second", Rank{1}).ok());
}

// Shutdown finishes every admitted request, then the server is gone.
TEST_F(LifecycleTest, GracefulShutdownDrainsInFlightWork) {
  start(one_worker_config());
  constexpr int kInFlight = 4;
  std::vector<std::future<CallResult<v1::DecomposeResponse>>> calls;
  for (int i = 0; i < kInFlight; ++i) {
    calls.push_back(std::async(std::launch::async, [&, i] {
      return client_->decompose(random_image(512, "drain" + std::to_string(i), 512));
    }));
  }
  wait_for_stats(*client_, [](const auto& s) { return s.jobs_in_flight() == kInFlight; });
  std::thread stopper([&] { server_->shutdown(); });
  for (auto& call : calls) {
    auto result = call.get();
    EXPECT_TRUE(result.ok()) << result.status().error_message();
  }
  stopper.join();
  ClientOptions options;
  options.timeout = std::chrono::seconds(2);
  Client after(target(), options);
  EXPECT_EQ(after.health().status().error_code(), grpc::StatusCode::UNAVAILABLE);
}

// --- The svdserve process ---------------------------------------------------------------------

// How long a process that works may take to start or to exit by itself.
constexpr auto kProcessBound = std::chrono::seconds(60);
// What an exit may take beyond the server's own limit: its margin after the drain timeout (1 s)
// plus signal delivery, process teardown and scheduling on a loaded machine.
constexpr auto kExitSlack = std::chrono::seconds(3);

using Milliseconds = std::chrono::milliseconds;

struct Exit {
  ProcessResult result;
  Milliseconds after_signal{0};
};

// Sends the signal and waits for the process to end (at most kProcessBound).
Exit signal_and_wait(Process& process, int signal_number) {
  const auto sent = std::chrono::steady_clock::now();
  process.signal(signal_number);
  Exit exit{process.wait(kProcessBound), {}};
  exit.after_signal =
      std::chrono::duration_cast<Milliseconds>(std::chrono::steady_clock::now() - sent);
  return exit;
}

// gRPC enables SO_REUSEPORT, under which a second server binds the same port and takes half the
// connections; it must refuse to start instead.
TEST(ServerProcessTest, SecondServerOnTheSamePortExitsNamingTheAddress) {
  ServerProcess first;
  ASSERT_TRUE(first.serving());
  const ProcessResult second = run_process(
      svdserve::test::server_binary(),
      {"--listen", first.address(), "--backend", "cpu", "--durability", "none"},
      kProcessBound);
  EXPECT_NE(second.exit_code, -1) << "the second server was still running";
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("address " + first.address() + " is already in use"),
            std::string::npos)
      << second.err;
  EXPECT_TRUE(first.client().server_info().ok());
}

TEST(ServerProcessTest, PortOutOfRangeIsRefusedAsABadConfig) {
  const ProcessResult result =
      run_process(svdserve::test::server_binary(),
                  {"--listen", "127.0.0.1:99999", "--backend", "cpu"}, kProcessBound);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("listen_address"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("99999"), std::string::npos) << result.err;
}

// A decomposition that runs far longer than the drain timeout cannot be interrupted: the process
// exits anyway, within the timeout and a margin, and says what it abandoned.
TEST(ServerProcessTest, SigtermDuringALongDecomposeExitsWithinTheDrainTimeout) {
  constexpr Milliseconds kDrainTimeout(1500);
  // sgesdd at full rank: tens of seconds on two cores.
  constexpr uint32_t kSide = 3072;
  ServerProcess server({"--cpu-svd", "exact", "--workers", "1", "--drain-timeout-ms",
                        std::to_string(kDrainTimeout.count())});
  ASSERT_TRUE(server.serving());
  auto slow = std::async(std::launch::async, [&] {
    return server.client().decompose(random_image(kSide, "slow", kSide));
  });
  wait_for_stats(server.client(), [](const auto& s) {
    return s.jobs_in_flight() == 1 && s.decode_queue_depth() == 0 && s.compute_queue_depth() == 0;
  });

  const Exit exit = signal_and_wait(server.process(), SIGTERM);
  EXPECT_NE(exit.result.exit_code, -1) << "still running " << kProcessBound.count() << " s later";
  EXPECT_LT(exit.after_signal, kDrainTimeout + kExitSlack);
  EXPECT_EQ(exit.result.exit_code, 4) << "the exit code of abandoned work";
  EXPECT_NE(exit.result.err.find("still running after drain_timeout_ms"), std::string::npos)
      << exit.result.err;
  EXPECT_FALSE(slow.get().ok());
}

// --load-dir loads before the server reports SERVING; a SIGTERM meanwhile is a graceful shutdown
// like any other, within the drain timeout, not a kill by the signal's default action.
TEST(ServerProcessTest, SigtermDuringTheStartupLoadExitsWithinTheDrainTimeout) {
  constexpr Milliseconds kDrainTimeout(1500);
  constexpr int kFiles = 24;  // sgesdd of a 1536^2 noise image: seconds each, minutes for all
  const TempFolder folder("svdserve-load-dir");
  cv::Mat noise(1536, 1536, CV_8UC1);
  cv::randu(noise, 0, 256);
  ASSERT_TRUE(cv::imwrite((folder.path() / "noise_00.png").string(), noise));
  for (int i = 1; i < kFiles; ++i) {  // hard links: regular files, as many as wanted
    std::filesystem::create_hard_link(folder.path() / "noise_00.png",
                                      folder.path() / ("noise_" + std::to_string(i) + ".png"));
  }
  const std::string address = "127.0.0.1:" + std::to_string(free_port());
  Process server(svdserve::test::server_binary(),
                 {"--listen", address, "--backend", "cpu", "--durability", "none", "--cpu-svd",
                  "exact", "--workers", "1",
                  "--load-dir", std::filesystem::canonical(folder.path()).string(),
                  "--drain-timeout-ms", std::to_string(kDrainTimeout.count())});
  ClientOptions options;
  options.wait_for_ready = true;
  options.timeout = std::chrono::seconds(60);
  const Client client(address, options);
  wait_for_stats(client, [](const auto& s) { return s.jobs_in_flight() >= 1; });
  const auto health = client.health();
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(*health, HealthStatus::not_serving) << "still loading";

  const Exit exit = signal_and_wait(server, SIGTERM);
  EXPECT_TRUE(exit.result.exit_code == 0 || exit.result.exit_code == 4)
      << "exit code " << exit.result.exit_code << " (-1: killed, or still running "
      << kProcessBound.count() << " s later)";
  EXPECT_LT(exit.after_signal, kDrainTimeout + kExitSlack);
  EXPECT_NE(exit.result.err.find("signal=15 received"), std::string::npos) << exit.result.err;
}

// Work admitted before SIGTERM is answered, not cancelled.
TEST(ServerProcessTest, CallsInFlightAtSigtermAreAllAnswered) {
  constexpr int kCalls = 4;
  constexpr uint32_t kSide = 768;  // about a second each at full rank on one worker
  ServerProcess server({"--workers", "1", "--max-batch-size", "1", "--drain-timeout-ms", "30000"});
  ASSERT_TRUE(server.serving());
  std::vector<std::future<CallResult<v1::DecomposeResponse>>> calls;
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::async(std::launch::async, [&, i] {
      return server.client().decompose(random_image(kSide, "quick" + std::to_string(i), kSide));
    }));
  }
  wait_for_stats(server.client(), [](const auto& s) { return s.jobs_in_flight() == kCalls; });

  const Exit exit = signal_and_wait(server.process(), SIGTERM);
  for (auto& call : calls) {
    const auto result = call.get();
    EXPECT_TRUE(result.ok()) << result.status().error_code() << " "
                             << result.status().error_message();
  }
  EXPECT_EQ(exit.result.exit_code, 0) << exit.result.err;
  EXPECT_NE(exit.result.err.find("shutdown: done"), std::string::npos) << exit.result.err;
}

// During the lame duck health says NOT_SERVING (to Check and to Watch) while calls are still
// answered; then the Watch ends with UNAVAILABLE rather than being cancelled at the deadline.
TEST(ServerProcessTest, HealthIsNotServingDuringTheLameDuckThenWatchesEnd) {
  constexpr Milliseconds kLameDuck(3000);
  constexpr Milliseconds kDrainTimeout(6000);
  ServerProcess server({"--lame-duck-ms", std::to_string(kLameDuck.count()), "--drain-timeout-ms",
                        std::to_string(kDrainTimeout.count())});
  ASSERT_TRUE(server.serving());
  const auto health = grpc::health::v1::Health::NewStub(server.client().channel());
  grpc::ClientContext watch_context;
  watch_context.set_deadline(std::chrono::system_clock::now() + kProcessBound);
  const auto watch = health->Watch(&watch_context, grpc::health::v1::HealthCheckRequest());
  grpc::health::v1::HealthCheckResponse update;
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  const auto sent = std::chrono::steady_clock::now();
  server.process().signal(SIGTERM);
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  const auto checked = server.client().health();
  ASSERT_TRUE(checked.ok()) << checked.status().error_message();
  EXPECT_EQ(*checked, HealthStatus::not_serving);
  EXPECT_TRUE(server.client().stats().ok());

  EXPECT_FALSE(watch->Read(&update));
  const grpc::Status ended = watch->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAVAILABLE) << ended.error_message();
  EXPECT_GE(std::chrono::steady_clock::now() - sent, kLameDuck);
  const ProcessResult result = server.process().wait(kProcessBound);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_LT(std::chrono::steady_clock::now() - sent, kDrainTimeout + kExitSlack);
}

// An open ReconstructStream whose answers are all written ends at the drain (UNAVAILABLE: send
// the rest elsewhere) instead of holding the exit until the drain timeout.
TEST(ServerProcessTest, OpenStreamsEndAtTheDrain) {
  constexpr Milliseconds kDrainTimeout(30000);
  ServerProcess server({"--drain-timeout-ms", std::to_string(kDrainTimeout.count())});
  ASSERT_TRUE(server.serving());
  ASSERT_TRUE(server.client().decompose(read_test_image("home.jpg"), 8, "home").ok());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kProcessBound);
  const auto stream = server.client().stub().ReconstructStream(&context);
  v1::ReconstructRequest request;
  request.set_id("home");
  request.set_rank(4);
  ASSERT_TRUE(stream->Write(request));
  v1::ReconstructStreamResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.status().code(), 0) << response.status().message();

  const auto sent = std::chrono::steady_clock::now();
  server.process().signal(SIGTERM);
  EXPECT_FALSE(stream->Read(&response));
  const grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAVAILABLE) << ended.error_message();
  const ProcessResult result = server.process().wait(kProcessBound);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_LT(std::chrono::steady_clock::now() - sent, kDrainTimeout / 2);
}

}  // namespace
}  // namespace svdserve::testing
