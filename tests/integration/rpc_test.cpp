// Every data RPC against a real server: results are checked against the input image itself,
// not against the server's own numbers.

#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cmath>
#include <filesystem>
#include <random>

#include "tests/test_paths.hpp"
#include "server_fixture.hpp"

namespace svdserve::testing {
namespace {

cv::Mat decode_unchanged(const std::string& bytes) {
  return cv::imdecode(cv::Mat(1, static_cast<int>(bytes.size()), CV_8U,
                              const_cast<char*>(bytes.data())),
                      cv::IMREAD_UNCHANGED);
}

cv::Mat as_mat(const v1::Shape& shape, const std::string& pixels, int depth) {
  return cv::Mat(static_cast<int>(shape.height()), static_cast<int>(shape.width()),
                 CV_MAKETYPE(depth, static_cast<int>(shape.channels())),
                 const_cast<char*>(pixels.data()))
      .clone();
}

// ||a - b||_F / ||a||_F in double.
double relative_difference(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat a64, b64;
  a.convertTo(a64, CV_64F);
  b.convertTo(b64, CV_64F);
  return cv::norm(a64 - b64) / cv::norm(a64);
}

double max_abs_difference(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat a64, b64;
  a.convertTo(a64, CV_64F);
  b.convertTo(b64, CV_64F);
  double max_value = 0;
  const cv::Mat difference = cv::abs(a64 - b64);
  cv::minMaxIdx(difference.reshape(1), nullptr, &max_value);
  return max_value;
}

std::string random_raw_u8(int width, int height, int channels, std::mt19937& rng) {
  std::uniform_int_distribution<int> value(0, 255);
  std::string data(static_cast<std::size_t>(width) * height * channels, '\0');
  for (char& c : data) c = static_cast<char>(value(rng));
  return data;
}

v1::DecomposeRequest raw_request(int width, int height, int channels, v1::PixelType type,
                                 std::string data, uint32_t max_rank, std::string id) {
  v1::DecomposeRequest request;
  auto* raw = request.mutable_image()->mutable_raw();
  raw->set_width(width);
  raw->set_height(height);
  raw->set_channels(channels);
  raw->set_type(type);
  raw->set_data(std::move(data));
  request.set_max_rank(max_rank);
  request.set_id(std::move(id));
  return request;
}

using RpcTest = ServerFixture;

// The reconstruction's actual error against the original image equals the error the server
// reports from the singular values (Eckart-Young), at several ranks, on a real colour photo.
TEST_F(RpcTest, ReconstructionErrorMatchesReportedErrorOnRealImage) {
  start();
  const std::string bytes = read_test_image("baboon.jpg");
  const cv::Mat original = decode_unchanged(bytes);
  auto decomposed = client_->decompose(bytes, 512, "baboon");
  ASSERT_TRUE(decomposed.ok()) << decomposed.status().error_message();
  EXPECT_EQ(decomposed->id(), "baboon");
  EXPECT_EQ(decomposed->shape().width(), static_cast<uint32_t>(original.cols));
  EXPECT_EQ(decomposed->shape().height(), static_cast<uint32_t>(original.rows));
  EXPECT_EQ(decomposed->shape().channels(), 3u);
  EXPECT_EQ(decomposed->rank_kept(), 512u);
  ASSERT_EQ(decomposed->singular_values_size(), 3);
  EXPECT_EQ(decomposed->singular_values(0).values_size(), 512);
  EXPECT_GT(decomposed->bytes_resident(), 0u);

  double previous_error = 1.0;
  for (uint32_t rank : {1u, 16u, 100u, 512u}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    auto reconstructed = client_->reconstruct("baboon", Rank{rank}, v1::OUTPUT_FORMAT_RAW_F32);
    ASSERT_TRUE(reconstructed.ok()) << reconstructed.status().error_message();
    EXPECT_EQ(reconstructed->rank(), rank);
    const cv::Mat pixels = as_mat(reconstructed->shape(), reconstructed->pixels(), CV_32F);
    const double actual = relative_difference(original, pixels);
    // float32 factors: the achieved error matches the optimal one to ~1e-5 absolute.
    EXPECT_NEAR(actual, reconstructed->relative_error(), 1e-4 + 1e-3 * actual);
    EXPECT_LT(reconstructed->relative_error(), previous_error);
    previous_error = reconstructed->relative_error();
  }
  // Full rank gives the image back: u8 output within one grey level everywhere.
  auto full = client_->reconstruct("baboon", Rank{512});
  ASSERT_TRUE(full.ok());
  EXPECT_LE(max_abs_difference(original, as_mat(full->shape(), full->pixels(), CV_8U)), 1.0);
}

TEST_F(RpcTest, PngOutputDecodesToTheRawPixels) {
  start();
  ASSERT_TRUE(client_->decompose(read_test_image("fruits.jpg"), 64, "fruits").ok());
  auto raw = client_->reconstruct("fruits", Rank{20}, v1::OUTPUT_FORMAT_RAW_U8);
  auto png = client_->reconstruct("fruits", Rank{20}, v1::OUTPUT_FORMAT_PNG);
  ASSERT_TRUE(raw.ok() && png.ok());
  const cv::Mat from_png = decode_unchanged(png->pixels());
  ASSERT_FALSE(from_png.empty());
  EXPECT_EQ(max_abs_difference(from_png, as_mat(raw->shape(), raw->pixels(), CV_8U)), 0.0);
}

TEST_F(RpcTest, EnergyFractionPicksTheSmallestSufficientRank) {
  start();
  auto decomposed = client_->decompose(read_test_image("building.jpg"), 128, "building");
  ASSERT_TRUE(decomposed.ok());
  auto reconstructed = client_->reconstruct("building", EnergyFraction{0.99});
  ASSERT_TRUE(reconstructed.ok()) << reconstructed.status().error_message();
  const uint32_t k = reconstructed->rank();
  ASSERT_GE(k, 1u);
  // Kept energy >= 99% means relative error^2 <= 1%, and one rank less is not enough.
  EXPECT_LE(reconstructed->relative_error(), std::sqrt(0.01) + 1e-9);
  if (k > 1) {
    auto smaller = client_->reconstruct("building", Rank{k - 1});
    ASSERT_TRUE(smaller.ok());
    EXPECT_GT(smaller->relative_error(), std::sqrt(0.01));
  }
}

// Wide, tall, grey and 16-bit inputs given as raw pixels; full rank returns them.
TEST_F(RpcTest, RawInputsOfEveryShapeAndDepthRoundTrip) {
  start();
  std::mt19937 rng(std::random_device{}());
  struct Case { int width, height, channels; };
  for (const Case c : {Case{300, 120, 1}, Case{120, 300, 3}, Case{64, 64, 4}}) {
    SCOPED_TRACE(std::to_string(c.width) + "x" + std::to_string(c.height) + "x" +
                 std::to_string(c.channels));
    std::string data = random_raw_u8(c.width, c.height, c.channels, rng);
    const cv::Mat original(c.height, c.width, CV_MAKETYPE(CV_8U, c.channels), data.data());
    const cv::Mat original_copy = original.clone();
    const uint32_t full_rank = static_cast<uint32_t>(std::min(c.width, c.height));
    auto decomposed = client_->decompose(
        raw_request(c.width, c.height, c.channels, v1::PIXEL_TYPE_U8, data, 4096, "raw"));
    ASSERT_TRUE(decomposed.ok()) << decomposed.status().error_message();
    EXPECT_EQ(decomposed->rank_kept(), full_rank);  // max_rank above the full rank is clamped
    auto full = client_->reconstruct("raw", Rank{full_rank});
    ASSERT_TRUE(full.ok());
    EXPECT_LE(max_abs_difference(original_copy, as_mat(full->shape(), full->pixels(), CV_8U)), 1.0);
  }
  // 16-bit values are scaled to the 0..255 scale.
  std::vector<uint16_t> wide(80 * 40);
  std::uniform_int_distribution<int> value(0, 65535);
  for (auto& v : wide) v = static_cast<uint16_t>(value(rng));
  std::string bytes(reinterpret_cast<const char*>(wide.data()), wide.size() * 2);
  auto decomposed = client_->decompose(raw_request(80, 40, 1, v1::PIXEL_TYPE_U16, bytes, 40, "u16"));
  ASSERT_TRUE(decomposed.ok()) << decomposed.status().error_message();
  auto full = client_->reconstruct("u16", Rank{40}, v1::OUTPUT_FORMAT_RAW_F32);
  ASSERT_TRUE(full.ok());
  cv::Mat expected_scaled;
  cv::Mat(40, 80, CV_16U, wide.data()).convertTo(expected_scaled, CV_32F, 255.0 / 65535.0);
  EXPECT_LT(max_abs_difference(expected_scaled, as_mat(full->shape(), full->pixels(), CV_32F)), 1e-2);
}

// A truncated decomposition (max_rank 30) and a one-shot Compress both report the true error
// of the rank-30 image against the original, not the error against the kept spectrum.
TEST_F(RpcTest, CompressMatchesDecomposeThenReconstructAndKeepsNothing) {
  start();
  const std::string bytes = read_test_image("messi5.jpg");
  const cv::Mat original = decode_unchanged(bytes);
  auto compressed = client_->compress(bytes, Rank{30}, v1::OUTPUT_FORMAT_RAW_F32);
  ASSERT_TRUE(compressed.ok()) << compressed.status().error_message();
  EXPECT_EQ(compressed->rank(), 30u);
  auto listed = client_->list_images();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->images_size(), 0);
  const double actual = relative_difference(original, as_mat(compressed->shape(), compressed->pixels(), CV_32F));
  EXPECT_GT(actual, 0.01);
  EXPECT_NEAR(compressed->relative_error(), actual, 1e-4 + 1e-3 * actual);

  ASSERT_TRUE(client_->decompose(bytes, 30, "messi").ok());
  auto reconstructed = client_->reconstruct("messi", Rank{30}, v1::OUTPUT_FORMAT_RAW_F32);
  ASSERT_TRUE(reconstructed.ok());
  EXPECT_NEAR(reconstructed->relative_error(), actual, 1e-4 + 1e-3 * actual);
  EXPECT_LE(max_abs_difference(as_mat(compressed->shape(), compressed->pixels(), CV_32F),
                               as_mat(reconstructed->shape(), reconstructed->pixels(), CV_32F)),
            1e-2);
  // Energy fractions are against the whole image too: 99.9% may need more than the 30 kept.
  auto by_energy = client_->reconstruct("messi", EnergyFraction{0.5});
  ASSERT_TRUE(by_energy.ok());
  EXPECT_LE(by_energy->relative_error(), std::sqrt(0.5) + 1e-9);
}

TEST_F(RpcTest, BatchAnswersEachItemWithItsOwnStatus) {
  start();
  ASSERT_TRUE(client_->decompose(read_test_image("home.jpg"), 32, "home").ok());
  v1::ReconstructBatchRequest request;
  for (uint32_t rank : {1u, 8u, 32u}) {
    auto* item = request.add_items();
    item->set_id("home");
    item->set_rank(rank);
  }
  auto* unknown = request.add_items();
  unknown->set_id("missing");
  unknown->set_rank(1);
  auto* too_high = request.add_items();
  too_high->set_id("home");
  too_high->set_rank(33);
  auto batch = client_->reconstruct_batch(request);
  ASSERT_TRUE(batch.ok()) << batch.status().error_message();
  ASSERT_EQ(batch->items_size(), 5);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(batch->items(i).status().code(), 0);
    EXPECT_EQ(batch->items(i).result().rank(), request.items(i).rank());
    EXPECT_FALSE(batch->items(i).result().pixels().empty());
  }
  EXPECT_EQ(batch->items(3).status().code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(batch->items(4).status().code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(RpcTest, StreamAnswersInRequestOrderAndSurvivesBadItems) {
  start();
  ASSERT_TRUE(client_->decompose(read_test_image("aero1.jpg"), 64, "aero").ok());
  ASSERT_TRUE(client_->decompose(read_test_image("building.jpg"), 64, "graf").ok());
  std::vector<v1::ReconstructRequest> requests;
  for (int i = 0; i < 40; ++i) {
    v1::ReconstructRequest r;
    r.set_id(i % 2 ? "aero" : "graf");
    r.set_rank(static_cast<uint32_t>(1 + i % 64));
    if (i == 7) r.set_id("nope");
    if (i == 13) r.set_rank(0);
    requests.push_back(r);
  }
  auto responses = client_->reconstruct_stream(requests);
  ASSERT_TRUE(responses.ok()) << responses.status().error_message();
  ASSERT_EQ(responses->size(), requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& response = (*responses)[i];
    if (i == 7) {
      EXPECT_EQ(response.status().code(), grpc::StatusCode::NOT_FOUND);
    } else if (i == 13) {
      EXPECT_EQ(response.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
    } else {
      ASSERT_EQ(response.status().code(), 0) << i << ": " << response.status().message();
      EXPECT_EQ(response.result().id(), requests[i].id());
      EXPECT_EQ(response.result().rank(), requests[i].rank());
    }
  }
}

TEST_F(RpcTest, ProgressiveStreamsIncreasingRanksWithFallingError) {
  start();
  ASSERT_TRUE(client_->decompose(read_test_image("butterfly.jpg"), 64, "starry").ok());
  v1::ReconstructProgressiveRequest request;
  request.set_id("starry");
  for (uint32_t rank : {64u, 4u, 16u, 4u, 1u}) request.add_ranks(rank);
  auto responses = client_->reconstruct_progressive(request);
  ASSERT_TRUE(responses.ok()) << responses.status().error_message();
  ASSERT_EQ(responses->size(), 4u);
  const uint32_t expected[] = {1, 4, 16, 64};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*responses)[i].rank(), expected[i]);
    if (i > 0) {
      EXPECT_LT((*responses)[i].relative_error(), (*responses)[i - 1].relative_error());
    }
  }
}

TEST_F(RpcTest, ImagesAreListedDescribedAndDeleted) {
  start();
  ASSERT_TRUE(client_->decompose(read_test_image("pic1.png"), 16, "pic").ok());
  auto info = client_->get_image("pic", true);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->info().state(), v1::IMAGE_STATE_RESIDENT);
  EXPECT_EQ(info->info().rank_kept(), 16u);
  EXPECT_GT(info->singular_values_size(), 0);
  auto listed = client_->list_images();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->images_size(), 1);
  EXPECT_EQ(listed->bytes_resident(), info->info().bytes_resident());
  auto deleted = client_->delete_image("pic");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(deleted->bytes_freed(), info->info().bytes_resident());
  EXPECT_EQ(client_->get_image("pic").status().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(client_->delete_image("pic").status().error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(RpcTest, LoadDirectoryDecomposesEveryImageOfTheFolder) {
  const std::string images = std::filesystem::canonical(svdserve::test::test_images_dir()).string();
  v1::ServerConfig config = test_config();
  config.add_load_roots(images);
  start(config);
  auto loaded = client_->load_directory(images, 32);
  ASSERT_TRUE(loaded.ok()) << loaded.status().error_message();
  const auto files = std::distance(std::filesystem::directory_iterator(images),
                                   std::filesystem::directory_iterator{});
  EXPECT_EQ(loaded->loaded(), static_cast<uint32_t>(files));
  EXPECT_EQ(loaded->failed(), 0u);
  auto listed = client_->list_images();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(static_cast<uint32_t>(listed->images_size()), loaded->loaded());
  auto baboon = client_->reconstruct("baboon.jpg", Rank{32});
  EXPECT_TRUE(baboon.ok()) << baboon.status().error_message();
}

// worker_threads sizes the batch workers, cpu_compute_threads the CPU backend's compute pool.
TEST_F(RpcTest, CpuComputeThreadsSizeTheBackendsPool) {
  v1::ServerConfig config = test_config();
  config.set_worker_threads(1);
  config.set_cpu_compute_threads(3);
  start(config);
  auto info = client_->server_info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->device().rfind("CPU backend: 3 ", 0), 0u) << info->device();
  auto decomposed = client_->decompose(read_test_image("gradient.png"), 8, "g");
  EXPECT_TRUE(decomposed.ok()) << decomposed.status().error_message();
}

TEST_F(RpcTest, ServerInfoStatsAndHealthDescribeTheServer) {
  start();
  auto info = client_->server_info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->backend(), "cpu");
  EXPECT_FALSE(info->device().empty());
  EXPECT_EQ(info->limits().max_rank(), 4096u);
  EXPECT_GT(info->memory_budget_bytes(), 0u);

  ASSERT_TRUE(client_->decompose(read_test_image("gradient.png"), 16, "chick").ok());
  ASSERT_TRUE(client_->reconstruct("chick", Rank{8}).ok());
  EXPECT_FALSE(client_->reconstruct("chick", Rank{0}).ok());
  auto stats = client_->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->images_resident(), 1u);
  EXPECT_GE(stats->batches(), 2u);
  bool saw_invalid = false;
  for (const auto& method : stats->methods()) {
    if (method.method() != "Reconstruct") continue;
    EXPECT_EQ(method.requests(), 2u);
    for (const auto& code : method.codes()) saw_invalid |= code.code() == "INVALID_ARGUMENT";
  }
  EXPECT_TRUE(saw_invalid);
  bool saw_compute = false;
  for (const auto& latency : stats->latencies()) {
    if (latency.stage() == "compute") saw_compute = latency.samples() >= 2 && latency.p50_us() > 0;
  }
  EXPECT_TRUE(saw_compute);

  auto health = client_->health();
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(*health, HealthStatus::serving);
}

TEST_F(RpcTest, ProfilingNeedsTheGpuBackend) {
  start();
  const grpc::Status status = client_->start_profiling();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find("GPU"), std::string::npos) << status.error_message();
}

}  // namespace
}  // namespace svdserve::testing
