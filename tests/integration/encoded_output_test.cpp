// PNG and JPEG answers from a real server over gRPC, decoded here with OpenCV and compared with
// the raw u8 reconstruction of the same rank: JPEG's quality and channel rules, many PNG answers
// encoded at once, and a shutdown that lands while answers are being encoded.

#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "server_fixture.hpp"

namespace svdserve::testing {
namespace {

constexpr auto kPatience = std::chrono::seconds(60);

// Mean |JPEG - raw| at quality 95: measured 1.55 grey levels on fruits.jpg at rank 20 and on the
// grey test image; 2.5 leaves room without accepting a wrong image.
constexpr double kMeanAbsDiffAtQuality95 = 2.5;

cv::Mat decode_unchanged(const std::string& bytes) {
  return cv::imdecode(cv::Mat(1, static_cast<int>(bytes.size()), CV_8U,
                              const_cast<char*>(bytes.data())),
                      cv::IMREAD_UNCHANGED);
}

cv::Mat as_u8_mat(const v1::Shape& shape, const std::string& pixels) {
  return cv::Mat(static_cast<int>(shape.height()), static_cast<int>(shape.width()),
                 CV_8UC(static_cast<int>(shape.channels())), const_cast<char*>(pixels.data()))
      .clone();
}

// Mean over every sample of |a - b|.
double mean_abs_difference(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat difference;
  cv::absdiff(a, b, difference);
  return cv::mean(difference.reshape(1))[0];
}

bool identical(const cv::Mat& a, const cv::Mat& b) {
  return a.size == b.size && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

v1::ReconstructRequest request_for(const std::string& id, uint32_t rank, v1::OutputFormat format,
                                   uint32_t jpeg_quality = 0) {
  v1::ReconstructRequest request;
  request.set_id(id);
  request.set_rank(rank);
  request.set_format(format);
  request.set_jpeg_quality(jpeg_quality);
  return request;
}

// A grey raw image with structure (a ramp plus noise), so that JPEG has something to keep.
v1::DecomposeRequest grey_image(int width, int height, std::string id) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> noise(-20, 20);
  std::string data(static_cast<std::size_t>(width) * height, '\0');
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const int value = (x * 255) / width / 2 + (y * 255) / height / 2 + noise(rng);
      data[static_cast<std::size_t>(y) * width + x] = static_cast<char>(std::clamp(value, 0, 255));
    }
  }
  v1::DecomposeRequest request;
  auto* raw = request.mutable_image()->mutable_raw();
  raw->set_width(width);
  raw->set_height(height);
  raw->set_channels(1);
  raw->set_type(v1::PIXEL_TYPE_U8);
  raw->set_data(std::move(data));
  request.set_id(std::move(id));
  request.set_max_rank(32);
  return request;
}

class EncodedOutputTest : public ServerFixture {
 protected:
  void decompose(const std::string& file, const std::string& id, uint32_t max_rank) {
    auto decomposed = client_->decompose(read_test_image(file), max_rank, id);
    ASSERT_TRUE(decomposed.ok()) << decomposed.status().error_message();
  }
};

TEST_F(EncodedOutputTest, JpegDecodesToTheShapeAndCloseToTheRawReconstruction) {
  start();
  decompose("fruits.jpg", "fruits", 64);
  auto raw = client_->reconstruct(request_for("fruits", 20, v1::OUTPUT_FORMAT_RAW_U8));
  auto jpeg = client_->reconstruct(request_for("fruits", 20, v1::OUTPUT_FORMAT_JPEG, 95));
  ASSERT_TRUE(raw.ok()) << raw.status().error_message();
  ASSERT_TRUE(jpeg.ok()) << jpeg.status().error_message();
  EXPECT_EQ(jpeg->format(), v1::OUTPUT_FORMAT_JPEG);
  EXPECT_EQ(jpeg->rank(), 20u);
  EXPECT_EQ(jpeg->relative_error(), raw->relative_error());
  ASSERT_EQ(jpeg->pixels().substr(0, 3), "\xff\xd8\xff");

  const cv::Mat decoded = decode_unchanged(jpeg->pixels());
  ASSERT_FALSE(decoded.empty());
  EXPECT_EQ(decoded.cols, 512);
  EXPECT_EQ(decoded.rows, 480);
  EXPECT_EQ(decoded.channels(), 3);
  EXPECT_EQ(decoded.depth(), CV_8U);
  EXPECT_LT(mean_abs_difference(decoded, as_u8_mat(raw->shape(), raw->pixels())),
            kMeanAbsDiffAtQuality95);
  EXPECT_LT(jpeg->pixels().size(), raw->pixels().size());
}

TEST_F(EncodedOutputTest, JpegQualityOrdersSizeAndZeroIsNinety) {
  start();
  decompose("baboon.jpg", "baboon", 64);
  auto size_at = [&](uint32_t quality) -> std::size_t {
    auto answer = client_->reconstruct(request_for("baboon", 48, v1::OUTPUT_FORMAT_JPEG, quality));
    EXPECT_TRUE(answer.ok()) << "quality " << quality << ": " << answer.status().error_message();
    return answer.ok() ? answer->pixels().size() : 0;
  };
  const std::size_t q30 = size_at(30);
  const std::size_t q95 = size_at(95);
  EXPECT_GT(q30, 0u);
  EXPECT_LT(q30, q95);
  EXPECT_EQ(size_at(0), size_at(90));  // libjpeg is deterministic: the default is exactly 90
}

TEST_F(EncodedOutputTest, GreyImagesGiveOneChannelJpeg) {
  start();
  ASSERT_TRUE(client_->decompose(grey_image(96, 64, "grey")).ok());
  auto jpeg = client_->reconstruct(request_for("grey", 16, v1::OUTPUT_FORMAT_JPEG, 95));
  auto raw = client_->reconstruct(request_for("grey", 16, v1::OUTPUT_FORMAT_RAW_U8));
  ASSERT_TRUE(jpeg.ok() && raw.ok()) << jpeg.status().error_message();
  const cv::Mat decoded = decode_unchanged(jpeg->pixels());
  ASSERT_FALSE(decoded.empty());
  EXPECT_EQ(decoded.channels(), 1);
  EXPECT_EQ(decoded.cols, 96);
  EXPECT_EQ(decoded.rows, 64);
  EXPECT_LT(mean_abs_difference(decoded, as_u8_mat(raw->shape(), raw->pixels())),
            kMeanAbsDiffAtQuality95);
}

// JPEG has no alpha: a BGRA image is refused with a pointer to PNG, which keeps all four.
TEST_F(EncodedOutputTest, FourChannelImagesAreRefusedAsJpegAndKeptAsPng) {
  start();
  decompose("gradient.png", "rgba", 16);
  auto jpeg = client_->reconstruct(request_for("rgba", 8, v1::OUTPUT_FORMAT_JPEG));
  ASSERT_EQ(jpeg.status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(jpeg.status().error_message().find("OUTPUT_FORMAT_PNG"), std::string::npos)
      << jpeg.status().error_message();

  auto png = client_->reconstruct(request_for("rgba", 8, v1::OUTPUT_FORMAT_PNG));
  ASSERT_TRUE(png.ok()) << png.status().error_message();
  EXPECT_EQ(decode_unchanged(png->pixels()).channels(), 4);

  // Compress learns the channels only after decoding; it is refused all the same.
  v1::CompressRequest compress;
  compress.mutable_image()->set_encoded(read_test_image("gradient.png"));
  compress.set_rank(4);
  compress.set_format(v1::OUTPUT_FORMAT_JPEG);
  auto compressed = client_->compress(compress);
  EXPECT_EQ(compressed.status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(compressed.status().error_message().find("OUTPUT_FORMAT_PNG"), std::string::npos)
      << compressed.status().error_message();
}

TEST_F(EncodedOutputTest, QualityAbove100IsInvalidArgumentEverywhere) {
  start();
  decompose("home.jpg", "home", 16);
  auto single = client_->reconstruct(request_for("home", 4, v1::OUTPUT_FORMAT_JPEG, 101));
  ASSERT_EQ(single.status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(single.status().error_message().find("jpeg_quality is 101; use 1..100"),
            std::string::npos)
      << single.status().error_message();

  v1::CompressRequest compress;
  compress.mutable_image()->set_encoded(read_test_image("home.jpg"));
  compress.set_rank(4);
  compress.set_format(v1::OUTPUT_FORMAT_JPEG);
  compress.set_jpeg_quality(250);
  EXPECT_EQ(client_->compress(compress).status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  const v1::ReconstructRequest items[] = {request_for("home", 4, v1::OUTPUT_FORMAT_JPEG, 1000),
                                          request_for("home", 4, v1::OUTPUT_FORMAT_JPEG, 100)};
  auto streamed = client_->reconstruct_stream(items);
  ASSERT_TRUE(streamed.ok()) << streamed.status().error_message();
  ASSERT_EQ(streamed->size(), 2u);
  EXPECT_EQ((*streamed)[0].status().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ((*streamed)[1].status().code(), 0) << (*streamed)[1].status().message();
  EXPECT_FALSE(decode_unchanged((*streamed)[1].result().pixels()).empty());
}

// Compress and the progressive stream carry the format and quality too.
TEST_F(EncodedOutputTest, CompressAndProgressiveAnswerJpeg) {
  start();
  v1::CompressRequest compress;
  compress.mutable_image()->set_encoded(read_test_image("butterfly.jpg"));
  compress.set_rank(24);
  compress.set_format(v1::OUTPUT_FORMAT_JPEG);
  compress.set_jpeg_quality(80);
  auto compressed = client_->compress(compress);
  ASSERT_TRUE(compressed.ok()) << compressed.status().error_message();
  EXPECT_EQ(compressed->format(), v1::OUTPUT_FORMAT_JPEG);
  const cv::Mat decoded = decode_unchanged(compressed->pixels());
  ASSERT_FALSE(decoded.empty());
  EXPECT_EQ(decoded.cols, 493);
  EXPECT_EQ(decoded.rows, 356);

  decompose("butterfly.jpg", "butterfly", 64);
  v1::ReconstructProgressiveRequest progressive;
  progressive.set_id("butterfly");
  for (uint32_t rank : {4u, 16u, 64u}) progressive.add_ranks(rank);
  progressive.set_format(v1::OUTPUT_FORMAT_JPEG);
  progressive.set_jpeg_quality(30);
  auto low = client_->reconstruct_progressive(progressive);
  progressive.set_jpeg_quality(95);
  auto high = client_->reconstruct_progressive(progressive);
  ASSERT_TRUE(low.ok() && high.ok()) << low.status().error_message();
  ASSERT_EQ(low->size(), 3u);
  ASSERT_EQ(high->size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(decode_unchanged((*low)[i].pixels()).empty());
    EXPECT_LT((*low)[i].pixels().size(), (*high)[i].pixels().size()) << "rank index " << i;
  }
}

// More PNG answers than encoder threads, in one batch call and in a stream: every one decodes to
// exactly the raw reconstruction of its rank.
TEST_F(EncodedOutputTest, ManyPngAnswersAtOnceAllDecodeToTheRawPixels) {
  v1::ServerConfig config = test_config();
  config.set_encoder_threads(2);
  config.set_max_batch_size(16);
  start(config);
  decompose("aero1.jpg", "aero", 64);
  constexpr uint32_t kItems = 48;
  auto rank_of = [](uint32_t i) { return 1 + (i * 7) % 64; };

  v1::ReconstructBatchRequest batch;
  std::vector<v1::ReconstructRequest> stream_items;
  for (uint32_t i = 0; i < kItems; ++i) {
    *batch.add_items() = request_for("aero", rank_of(i), v1::OUTPUT_FORMAT_PNG);
    stream_items.push_back(request_for("aero", rank_of(i), v1::OUTPUT_FORMAT_PNG));
  }
  auto batched = client_->reconstruct_batch(batch);
  ASSERT_TRUE(batched.ok()) << batched.status().error_message();
  ASSERT_EQ(batched->items_size(), static_cast<int>(kItems));
  auto streamed = client_->reconstruct_stream(stream_items);
  ASSERT_TRUE(streamed.ok()) << streamed.status().error_message();
  ASSERT_EQ(streamed->size(), kItems);

  std::map<uint32_t, cv::Mat> raw_by_rank;
  for (uint32_t i = 0; i < kItems; ++i) {
    SCOPED_TRACE("item " + std::to_string(i));
    const uint32_t rank = rank_of(i);
    if (!raw_by_rank.contains(rank)) {
      auto raw = client_->reconstruct(request_for("aero", rank, v1::OUTPUT_FORMAT_RAW_U8));
      ASSERT_TRUE(raw.ok()) << raw.status().error_message();
      raw_by_rank[rank] = as_u8_mat(raw->shape(), raw->pixels());
    }
    const std::vector<const v1::ReconstructStreamResponse*> answers{
        &batched->items(static_cast<int>(i)), &(*streamed)[i]};
    for (const v1::ReconstructStreamResponse* answer : answers) {
      ASSERT_EQ(answer->status().code(), 0) << answer->status().message();
      EXPECT_EQ(answer->result().rank(), rank);
      EXPECT_TRUE(identical(decode_unchanged(answer->result().pixels()), raw_by_rank[rank]));
    }
  }
}

// A shutdown that starts while PNG answers wait for the one encoder: every admitted item is
// answered (done, or UNAVAILABLE), and the shutdown ends.
TEST_F(EncodedOutputTest, ShutdownWithEncodesInFlightAnswersEveryItem) {
  v1::ServerConfig config = test_config();
  config.set_encoder_threads(1);
  // Past the drain timeout gRPC cancels the call; that limit is not what this test is about.
  config.set_drain_timeout_ms(static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(kPatience).count()));
  start(config);
  decompose("baboon.jpg", "baboon", 64);
  constexpr int kItems = 32;
  v1::ReconstructBatchRequest batch;
  for (int i = 0; i < kItems; ++i) {
    *batch.add_items() = request_for("baboon", 64, v1::OUTPUT_FORMAT_PNG);
  }
  // The decompose's job is counted until just after its answer; wait it out, so that a job in
  // flight below can only be one of the batch's.
  const auto give_up = std::chrono::steady_clock::now() + kPatience;
  bool idle = false;
  while (!idle && std::chrono::steady_clock::now() < give_up) {
    auto stats = client_->stats();
    idle = stats.ok() && stats->jobs_in_flight() == 0;
  }
  ASSERT_TRUE(idle) << "the decompose never left the pipeline";
  auto call = std::async(std::launch::async, [&] { return client_->reconstruct_batch(batch); });

  // Until the server holds the items (computing or waiting to be encoded).
  bool in_flight = false;
  while (!in_flight && std::chrono::steady_clock::now() < give_up &&
         call.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    auto stats = client_->stats();
    in_flight = stats.ok() && stats->jobs_in_flight() > 0;
  }
  ASSERT_TRUE(in_flight) << "the batch finished before the test saw it in flight";
  auto stopped = std::async(std::launch::async, [&] { server_->shutdown(); });

  ASSERT_EQ(call.wait_for(kPatience), std::future_status::ready) << "the call was never answered";
  ASSERT_EQ(stopped.wait_for(kPatience), std::future_status::ready) << "shutdown did not end";
  auto answered = call.get();
  ASSERT_TRUE(answered.ok()) << answered.status().error_code() << ": "
                             << answered.status().error_message();
  ASSERT_EQ(answered->items_size(), kItems);
  int done = 0;
  for (const auto& item : answered->items()) {
    if (item.status().code() == 0) {
      ++done;
      EXPECT_FALSE(decode_unchanged(item.result().pixels()).empty());
    } else {
      EXPECT_EQ(item.status().code(), grpc::StatusCode::UNAVAILABLE) << item.status().message();
    }
  }
  EXPECT_GT(done, 0);
}

}  // namespace
}  // namespace svdserve::testing
