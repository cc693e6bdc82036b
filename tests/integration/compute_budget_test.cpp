// Every request's compute is bounded, against the real svdserve binary: an image small on the
// wire whose decomposition would hold the CPU for minutes is refused at its header, and a
// decompose whose client gives up stops at the next plane, freeing the worker for the next call.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "png_of_zeros.hpp"
#include "measured_call.hpp"
#include "process.hpp"
#include "server_fixture.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

using Seconds = std::chrono::duration<double>;

// What a refusal may cost: reading a header, not decoding 512 MiB of samples (seconds) or
// decomposing them (the 13 minutes and 4.6 GiB).
constexpr auto kMaxRefusalTime = std::chrono::seconds(5);
constexpr int64_t kMaxPeakGrowthBytes = int64_t{64} << 20;
constexpr auto kConditionTimeout = std::chrono::seconds(60);
constexpr uint8_t kRgba = 6;
constexpr uint8_t kSixteenBits = 16;

// The image: 8192^2 16-bit RGBA zeros, 522 KB as a PNG, inside every size limit.
const std::string& attack_png() {
  static const std::string png = png_of_zeros(8192, 8192, kRgba, kSixteenBits);
  return png;
}

v1::CompressRequest compress_everything(const std::string& png) {
  v1::CompressRequest request;
  request.mutable_image()->set_encoded(png);
  request.set_energy_fraction(1.0);
  request.set_format(v1::OUTPUT_FORMAT_PNG);
  return request;
}

// Random u8 samples (no deflation helps sgesdd) of size x size with `channels`.
v1::DecomposeRequest random_raw(uint32_t size, uint32_t channels, const std::string& id) {
  std::mt19937 random(size * 31 + channels);
  std::uniform_int_distribution<int> value(0, 255);
  v1::DecomposeRequest request;
  auto* raw = request.mutable_image()->mutable_raw();
  raw->set_width(size);
  raw->set_height(size);
  raw->set_channels(channels);
  raw->set_type(v1::PIXEL_TYPE_U8);
  std::string data(std::size_t{size} * size * channels, '\0');
  for (char& c : data) c = static_cast<char>(value(random));
  raw->set_data(std::move(data));
  request.set_id(id);
  request.set_max_rank(size);  // full rank: sgesdd on every plane
  return request;
}

class ComputeBudgetTest : public ::testing::Test {
 protected:
  void start(const std::vector<std::string>& extra) {
    port_ = free_port();
    std::vector<std::string> args{"--listen", address(), "--backend", "cpu", "--log-level",
                                  "warn", "--durability", "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<Process>(svdserve::test::server_binary(), args);
    client_ = make_client(std::chrono::seconds(60));
    auto health = client_->health();
    ASSERT_TRUE(health.ok()) << health.status().error_message();
    ASSERT_EQ(*health, HealthStatus::serving);
  }

  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  [[nodiscard]] std::unique_ptr<Client> make_client(std::chrono::milliseconds timeout) const {
    ClientOptions options;
    options.wait_for_ready = true;
    options.timeout = timeout;
    return std::make_unique<Client>(address(), options);
  }

  MeasuredCall measure(const std::function<grpc::Status()>& call) const {
    return measure_call(server_->pid(), call);
  }

  static void expect_refused(const MeasuredCall& call, grpc::StatusCode code,
                             const std::vector<std::string>& parts) {
    svdserve::testing::expect_refused(call, code, parts, kMaxRefusalTime, kMaxPeakGrowthBytes);
  }

  void expect_still_serving() const {
    auto small = client_->decompose(read_test_image("baboon.jpg"), 16, "baboon");
    EXPECT_TRUE(small.ok()) << small.status().error_message();
  }

  int port_ = 0;
  std::unique_ptr<Process> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ComputeBudgetTest, AFullRankDecompositionOfALargeImageIsRefusedAtItsHeader) {
  start({"--workers", "2", "--cpu-compute-threads", "2"});
  ASSERT_LT(attack_png().size(), std::size_t{1} << 20);

  const v1::CompressRequest everything = compress_everything(attack_png());
  expect_refused(measure([&] { return client_->compress(everything).status(); }),
                 grpc::StatusCode::RESOURCE_EXHAUSTED,
                 {"8192x8192", "rank 8192", "max_compute_ms of 60000",
                  "instead of energy_fraction"});
  expect_refused(measure([&] { return client_->decompose(attack_png(), 4096).status(); }),
                 grpc::StatusCode::RESOURCE_EXHAUSTED,
                 {"8192x8192", "rank 4096", "max_compute_ms", "lower max_rank"});
  expect_still_serving();
}

TEST_F(ComputeBudgetTest, ADeadlineShorterThanTheEstimateIsRefusedAtItsHeader) {
  start({"--workers", "2", "--cpu-compute-threads", "2", "--max-compute-ms", "0"});
  // The client's own deadline would say DEADLINE_EXCEEDED too, but only after it passed and
  // without the server's words.
  const auto hurried = make_client(std::chrono::seconds(20));
  const v1::CompressRequest everything = compress_everything(attack_png());
  expect_refused(measure([&] { return hurried->compress(everything).status(); }),
                 grpc::StatusCode::DEADLINE_EXCEEDED,
                 {"8192x8192", "is estimated at", "s left; allow a longer deadline"});
  expect_still_serving();
}

// One worker computing a 4-channel image plane after plane; its client cancels. The next call
// is answered within about one plane's time, not after the image's other planes.
TEST_F(ComputeBudgetTest, ACancelledDecomposeFreesTheWorkerWithinAboutOnePlane) {
  start({"--workers", "1", "--cpu-compute-threads", "1", "--max-batch-size", "1",
         "--max-compute-ms", "0"});
  constexpr uint32_t kSize = 1536;
  // One plane's time on this host, as a whole call.
  const auto plane_start = std::chrono::steady_clock::now();
  auto one_plane = client_->decompose(random_raw(kSize, 1, "one-plane"));
  const Seconds plane_seconds = std::chrono::steady_clock::now() - plane_start;
  ASSERT_TRUE(one_plane.ok()) << one_plane.status().error_message();

  const v1::DecomposeRequest four_planes = random_raw(kSize, 4, "four-planes");
  grpc::ClientContext context;
  v1::DecomposeResponse ignored;
  std::promise<grpc::Status> big_status;
  const double cpu_before = cpu_seconds(server_->pid());
  client_->stub().async()->Decompose(&context, &four_planes, &ignored,
                                     [&](grpc::Status status) { big_status.set_value(status); });
  // Computing: the server has spent a tenth of a plane's CPU time on it.
  const auto give_up = std::chrono::steady_clock::now() + kConditionTimeout;
  while (cpu_seconds(server_->pid()) - cpu_before < 0.1 * plane_seconds.count() &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  context.TryCancel();
  const auto cancelled_at = std::chrono::steady_clock::now();
  auto next = client_->decompose(read_test_image("baboon.jpg"), 16, "next");
  const Seconds waited = std::chrono::steady_clock::now() - cancelled_at;
  ASSERT_TRUE(next.ok()) << next.status().error_message();
  EXPECT_EQ(big_status.get_future().get().error_code(), grpc::StatusCode::CANCELLED);

  // The whole image is about four planes; what is left of one plane, and the small call, is
  // well under two.
  EXPECT_LT(waited.count(), 2 * plane_seconds.count())
      << "one plane: " << plane_seconds.count() << " s";
  EXPECT_EQ(client_->get_image("four-planes").status().error_code(),
            grpc::StatusCode::NOT_FOUND)
      << "a cancelled decomposition is not stored";
}

}  // namespace
}  // namespace svdserve::testing
