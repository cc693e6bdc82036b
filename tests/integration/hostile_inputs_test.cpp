// Hostile inputs against the real svdserve binary: each is refused with a status that says what is
// wrong, within a bounded time and peak memory, nothing is left behind, and the server keeps
// serving. OpenCV's own size limits are raised in the server's environment far past the server's,
// so the server has to hold its own.

#include <google/protobuf/descriptor.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <random>
#include <vector>

#include "png_of_zeros.hpp"
#include "measured_call.hpp"
#include "process.hpp"
#include "server_fixture.hpp"
#include "tests/client/temp_folder.hpp"
#include "tests/support/hostile_images.hpp"
#include "tests/test_paths.hpp"
#include "svdserve/v1/svdserve.grpc.pb.h"

namespace svdserve::testing {
namespace {

namespace fs = std::filesystem;

// What a refusal may cost the server: the bounds, far above what reading a header takes
// and far below decoding the images these files declare (hundreds of MiB, seconds).
constexpr auto kMaxAnswerTime = std::chrono::seconds(2);
constexpr int64_t kMaxPeakGrowthBytes = int64_t{64} << 20;

// A small JPEG whose frame header declares width x height.
std::string jpeg_declaring(uint16_t width, uint16_t height) {
  cv::Mat pixels(8, 8, CV_8UC1, cv::Scalar(128));
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(cv::imencode(".jpg", pixels, bytes));
  for (std::size_t i = 2; i + 9 < bytes.size(); ++i) {
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xC0) {
      bytes[i + 5] = height >> 8, bytes[i + 6] = height & 0xFF;
      bytes[i + 7] = width >> 8, bytes[i + 8] = width & 0xFF;
      break;
    }
  }
  return {bytes.begin(), bytes.end()};
}

std::string encode(const cv::Mat& image, const std::string& extension) {
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(cv::imencode(extension, image, bytes));
  return {bytes.begin(), bytes.end()};
}

v1::DecomposeRequest raw_f32(uint32_t width, uint32_t height, const std::vector<float>& values,
                             uint32_t max_rank = 0) {
  v1::DecomposeRequest request;
  auto* raw = request.mutable_image()->mutable_raw();
  raw->set_width(width);
  raw->set_height(height);
  raw->set_channels(1);
  raw->set_type(v1::PIXEL_TYPE_F32);
  raw->set_data(std::string(reinterpret_cast<const char*>(values.data()),
                            values.size() * sizeof(float)));
  request.set_max_rank(max_rank);
  return request;
}

// Random signs times magnitude: a full-rank matrix whose entries are all that large.
std::vector<float> signed_values(std::size_t count, float magnitude, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<float> values(count);
  for (float& value : values) value = (random() & 1) ? magnitude : -magnitude;
  return values;
}

class HostileInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = free_port();
    server_ = std::make_unique<Process>(
        svdserve::test::server_binary(),
        std::vector<std::string>{"--listen", address(), "--backend", "cpu", "--workers", "2",
                                 "--loaders", "2", "--encoders", "1", "--cpu-compute-threads",
                                 "2", "--log-level", "warn", "--durability", "none", "--load-root",
                                 load_root().string()},
        std::map<std::string, std::string>{
            {"OPENCV_IO_MAX_IMAGE_PIXELS", std::to_string(uint64_t{1} << 34)},
            {"OPENCV_IO_MAX_IMAGE_WIDTH", std::to_string(1 << 20)},
            {"OPENCV_IO_MAX_IMAGE_HEIGHT", std::to_string(1 << 20)},
            {"OPENCV_TEMP_PATH", scratch_.path().string()},
            {"TMPDIR", scratch_.path().string()}});
    ClientOptions options;
    options.wait_for_ready = true;
    options.timeout = std::chrono::seconds(60);
    client_ = std::make_unique<Client>(address(), options);
    auto health = client_->health();
    ASSERT_TRUE(health.ok()) << health.status().error_message();
    ASSERT_EQ(*health, HealthStatus::serving);
    auto baboon = client_->decompose(read_test_image("baboon.jpg"), 16, "baboon");
    ASSERT_TRUE(baboon.ok()) << baboon.status().error_message();
  }

  void TearDown() override {
    client_.reset();
    server_.reset();
  }

  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // LoadDirectory's one root, apart from the server's temp folder (which must stay empty).
  [[nodiscard]] fs::path load_root() const { return fs::canonical(loads_.path()); }

  MeasuredCall measure(const std::function<grpc::Status()>& call) const {
    return measure_call(server_->pid(), call);
  }

  MeasuredCall decompose(const std::string& bytes) const {
    return measure([&] { return client_->decompose(bytes).status(); });
  }

  static void expect_refused(const MeasuredCall& call, grpc::StatusCode code,
                             const std::vector<std::string>& parts) {
    svdserve::testing::expect_refused(call, code, parts, kMaxAnswerTime, kMaxPeakGrowthBytes);
  }

  void expect_still_serving() const {
    auto good = client_->reconstruct("baboon", Rank{8});
    EXPECT_TRUE(good.ok()) << good.status().error_message();
  }

  TempFolder scratch_{"svdserve-hostile"};
  TempFolder loads_{"svdserve-hostile-loads"};
  int port_ = 0;
  std::unique_ptr<Process> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(HostileInputsTest, OversizedImagesAreRefusedAtTheHeaderInEveryFormat) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"PNG", png_of_zeros(16000, 16000)},
      {"JPEG", jpeg_declaring(32768, 32768)},
      {"TIFF", svdserve::test::tiff_declaring(16000, 16000)},
      {"BigTIFF", svdserve::test::bigtiff_declaring(16000, 16000)},
      {"BMP", svdserve::test::bmp_declaring(16000, 16000)},
      {"PGM", svdserve::test::pgm_declaring(16000, 16000)},
      {"WebP VP8L", svdserve::test::webp_lossless_declaring(16000, 16000)},
      {"WebP VP8X", svdserve::test::webp_extended_declaring(16000, 16000)},
  };
  for (const auto& [format, bytes] : files) {
    SCOPED_TRACE(format + ", " + std::to_string(bytes.size()) + " bytes");
    const std::string size = format == "JPEG" ? "32768x32768" : "16000x16000";
    expect_refused(decompose(bytes), grpc::StatusCode::INVALID_ARGUMENT,
                   {size, "max_image_width/height"});
    expect_still_serving();
  }
}

TEST_F(HostileInputsTest, OnlyTheDocumentedFormatsAreDecodedAndNothingIsWritten) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"Radiance HDR", svdserve::test::radiance_hdr_8x8()},
      {"Radiance HDR header", svdserve::test::radiance_hdr_header(1 << 21, 1)},
      {"PFM", svdserve::test::pfm_8x8()},
      {"PAM", svdserve::test::pam_8x8()},
      {"Sun raster", svdserve::test::sun_raster_8x8()},
  };
  for (const auto& [format, bytes] : files) {
    SCOPED_TRACE(format);
    expect_refused(decompose(bytes), grpc::StatusCode::INVALID_ARGUMENT,
                   {"PNG, JPEG, TIFF, BMP, PNM (P1-P6) or WebP"});
    expect_still_serving();
  }
  EXPECT_TRUE(fs::is_empty(scratch_.path()))
      << "the server wrote " << fs::directory_iterator(scratch_.path())->path();
}

TEST_F(HostileInputsTest, TruncatedImagesAreInvalidArgument) {
  const cv::Mat photo = cv::imread(svdserve::test::test_images_dir() + std::string("/fruits.jpg"));
  ASSERT_FALSE(photo.empty());
  const std::string jpeg = read_test_image("baboon.jpg");
  const std::string png = read_test_image("pic1.png");
  struct Cut {
    std::string format;
    std::string bytes;
    std::size_t kept;
  };
  const std::vector<Cut> cuts = {
      {"JPEG", jpeg, jpeg.size() / 2},
      {"JPEG", jpeg, jpeg.size() - 2},  // all but the end-of-image marker
      {"PNG", png, png.size() / 2},
      {"PNG", png, png.size() - 12},  // all but the IEND chunk
      {"TIFF", encode(photo, ".tiff"), 0},
      {"BMP", encode(photo, ".bmp"), 0},
      {"PNM", encode(photo, ".ppm"), 0},
      {"WebP", encode(photo, ".webp"), 0},
  };
  for (const Cut& cut : cuts) {
    const std::size_t kept = cut.kept != 0 ? cut.kept : cut.bytes.size() / 2;
    SCOPED_TRACE(cut.format + ", " + std::to_string(kept) + " of " +
                 std::to_string(cut.bytes.size()) + " bytes");
    ASSERT_TRUE(client_->decompose(cut.bytes).ok()) << "the whole file decodes";
    expect_refused(decompose(cut.bytes.substr(0, kept)), grpc::StatusCode::INVALID_ARGUMENT,
                   {"not a decodable " + cut.format, "truncated"});
    expect_still_serving();
  }
}

TEST_F(HostileInputsTest, FloatSamplesWhoseDecompositionOverflowsAreInvalidArgument) {
  // 16 x 16 goes to LAPACK, 256 x 256 at rank 8 to the randomized solver.
  for (const uint32_t side : {16u, 256u}) {
    SCOPED_TRACE(std::to_string(side) + "x" + std::to_string(side));
    const std::vector<float> huge = signed_values(std::size_t{side} * side, 3e38F, side);
    const v1::DecomposeRequest request = raw_f32(side, side, huge, 8);
    expect_refused(measure([&] { return client_->decompose(request).status(); }),
                   grpc::StatusCode::INVALID_ARGUMENT, {"too large"});
    v1::CompressRequest compress;
    *compress.mutable_image() = request.image();
    compress.set_rank(2);
    expect_refused(measure([&] { return client_->compress(compress).status(); }),
                   grpc::StatusCode::INVALID_ARGUMENT, {"too large"});
    expect_still_serving();
  }
  // Large but representable: decomposed, with finite singular values and error.
  auto large = client_->decompose(raw_f32(16, 16, signed_values(256, 1e30F, 7), 8));
  ASSERT_TRUE(large.ok()) << large.status().error_message();
  for (float value : large->singular_values(0).values()) EXPECT_TRUE(std::isfinite(value));
  auto reconstruction = client_->reconstruct(large->id(), Rank{4}, v1::OUTPUT_FORMAT_RAW_F32);
  ASSERT_TRUE(reconstruction.ok()) << reconstruction.status().error_message();
  EXPECT_GE(reconstruction->relative_error(), 0.0);
  EXPECT_LE(reconstruction->relative_error(), 1.0);
}

TEST_F(HostileInputsTest, EveryRpcTakingAnIdChecksIt) {
  const std::string long_id(10 * 1024, 'x');
  const auto expect_id_refused = [&](const grpc::Status& status) {
    const std::string shown = status.error_message().substr(0, 300);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << shown;
    EXPECT_NE(status.error_message().find("256 bytes"), std::string::npos) << shown;
    EXPECT_LT(status.error_message().size(), 512U) << shown;
  };
  expect_id_refused(client_->reconstruct(long_id, Rank{1}).status());
  expect_id_refused(client_->get_image(long_id).status());
  expect_id_refused(client_->delete_image(long_id).status());
  v1::ReconstructProgressiveRequest progressive;
  progressive.set_id(long_id);
  progressive.add_ranks(1);
  expect_id_refused(client_->reconstruct_progressive(progressive).status());

  std::vector<v1::ReconstructRequest> items(2);
  items[0].set_id(long_id);
  items[0].set_rank(1);
  items[1].set_id("baboon");
  items[1].set_rank(1);
  v1::ReconstructBatchRequest batch;
  for (const auto& item : items) *batch.add_items() = item;
  auto batch_answer = client_->reconstruct_batch(batch);
  ASSERT_TRUE(batch_answer.ok()) << batch_answer.status().error_message();
  expect_id_refused(item_status(batch_answer->items(0).status()));
  EXPECT_TRUE(item_status(batch_answer->items(1).status()).ok());
  auto stream_answer = client_->reconstruct_stream(items);
  ASSERT_TRUE(stream_answer.ok()) << stream_answer.status().error_message();
  expect_id_refused(item_status((*stream_answer)[0].status()));
  EXPECT_TRUE(item_status((*stream_answer)[1].status()).ok());

  const grpc::Status control_characters = client_->get_image(std::string("a\nb")).status();
  EXPECT_EQ(control_characters.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << control_characters.error_message();

  // LoadDirectory's ids are paths below the root: one longer than an id is that file's error.
  const fs::path deep = load_root() / std::string(200, 'd') / std::string(200, 'e');
  fs::create_directories(deep);
  fs::copy_file(svdserve::test::test_images_dir() + std::string("/pic1.png"), deep / "pic1.png");
  fs::copy_file(svdserve::test::test_images_dir() + std::string("/pic1.png"),
                load_root() / "pic1.png");
  auto loaded = client_->load_directory(load_root().string(), 8, /*recursive=*/true);
  ASSERT_TRUE(loaded.ok()) << loaded.status().error_message();
  ASSERT_EQ(loaded->results_size(), 2);
  for (const v1::LoadResult& result : loaded->results()) {
    SCOPED_TRACE(result.id().substr(0, 40));
    if (result.id() == "pic1.png") {
      EXPECT_TRUE(item_status(result.status()).ok()) << result.status().message();
    } else {
      expect_id_refused(item_status(result.status()));
    }
  }

  // An unknown id at the limit is echoed whole; a long path is cut.
  const std::string longest_id(256, 'y');
  const grpc::Status unknown = client_->reconstruct(longest_id, Rank{1}).status();
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND) << unknown.error_message();
  EXPECT_NE(unknown.error_message().find(longest_id), std::string::npos);
  const grpc::Status outside = client_->load_directory("/" + long_id).status();
  EXPECT_EQ(outside.error_code(), grpc::StatusCode::PERMISSION_DENIED) << outside.error_message();
  EXPECT_EQ(outside.error_message().find("xxx"), std::string::npos) << "a path is not echoed";
  const grpc::Status no_folder =
      client_->load_directory(load_root().string() + "/" + long_id).status();
  const std::string shown = no_folder.error_message().substr(0, 300);
  EXPECT_EQ(no_folder.error_code(), grpc::StatusCode::NOT_FOUND) << shown;
  EXPECT_LE(no_folder.error_message().size(), 1024U) << shown;
  EXPECT_EQ(no_folder.error_message().find(load_root().string()), std::string::npos) << shown;
  expect_still_serving();
}

TEST_F(HostileInputsTest, DecodeFailuresSayWhatFailedWithoutLibraryDetails) {
  std::string bad_png = read_test_image("pic1.png");
  bad_png.replace(bad_png.size() / 2, 64, std::string(64, '\x55'));  // corrupt the deflate data
  std::string bad_jpeg = read_test_image("baboon.jpg");
  const std::size_t huffman = bad_jpeg.find("\xFF\xC4");
  ASSERT_NE(huffman, std::string::npos);
  bad_jpeg.replace(huffman + 5, 16, std::string(16, '\xFF'));  // code counts no code can have
  const std::vector<std::pair<std::string, std::string>> files = {
      {"corrupt PNG", bad_png},
      {"corrupt JPEG", bad_jpeg},
      {"TIFF without its strip", svdserve::test::tiff_declaring(64, 64)},
      {"BMP without pixels", svdserve::test::bmp_declaring(64, 64)},
      {"PGM without most pixels", svdserve::test::pgm_declaring(64, 64)},
  };
  for (const auto& [what, bytes] : files) {
    SCOPED_TRACE(what);
    const grpc::Status status = client_->decompose(bytes).status();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    const std::string& message = status.error_message();
    EXPECT_TRUE(message.starts_with("not a decodable ")) << message;
    for (const char* internal : {".cpp", "/build", "OpenCV", "libpng", "error:", "modules/"}) {
      EXPECT_EQ(message.find(internal), std::string::npos) << message;
    }
  }
  expect_still_serving();
}

// Bytes that are not the method's request, on every method but ReconstructStream (where they
// fail one item: ZeroCopyTest): INVALID_ARGUMENT naming the request type, at once, and the
// server goes on. gRPC's typed handlers would answer UNIMPLEMENTED with no message.
TEST_F(HostileInputsTest, UnparsableRequestBytesAreInvalidArgumentOnEveryMethod) {
  // One request, then the call's status; any call shape (unary, server streaming) takes it.
  class OneRequest final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    explicit OneRequest(grpc::ByteBuffer request) : request_(std::move(request)) {}
    void start() {
      StartWriteLast(&request_, grpc::WriteOptions());
      StartRead(&answer_);
      StartCall();
    }
    void OnReadDone(bool ok) override {
      if (ok) StartRead(&answer_);
    }
    void OnDone(const grpc::Status& status) override { done_.set_value(status); }
    grpc::Status wait() { return done_.get_future().get(); }

   private:
    grpc::ByteBuffer request_;
    grpc::ByteBuffer answer_;
    std::promise<grpc::Status> done_;
  };
  const auto* service = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
      v1::SvdServe::service_full_name());
  ASSERT_NE(service, nullptr);
  grpc::GenericStub stub(grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
  const std::string bad_wire_type("\x0f\x01", 2);  // field 1, wire type 7: none such
  int methods = 0;
  for (int i = 0; i < service->method_count(); ++i) {
    const auto* method = service->method(i);
    if (method->client_streaming()) continue;  // ReconstructStream
    ++methods;
    const std::string path =
        std::string("/").append(v1::SvdServe::service_full_name()).append("/").append(
            method->name());
    const MeasuredCall call = measure([&] {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      const grpc::Slice slice(bad_wire_type);
      OneRequest reactor{grpc::ByteBuffer(&slice, 1)};
      stub.PrepareBidiStreamingCall(&context, path, grpc::StubOptions(), &reactor);
      reactor.start();
      return reactor.wait();
    });
    SCOPED_TRACE(path);
    expect_refused(call, grpc::StatusCode::INVALID_ARGUMENT,
                   {"not a valid " + std::string(method->input_type()->full_name())});
  }
  EXPECT_EQ(methods, 14);  // every method of the proto but ReconstructStream
  expect_still_serving();
}

}  // namespace
}  // namespace svdserve::testing
