// svdserve-cli's commands against the in-process fake server (see fake_server.hpp: an "image"
// file holds the text "WxHxC").

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "client/image_files.hpp"
#include "fake_server.hpp"
#include "run_cli.hpp"
#include "temp_folder.hpp"

namespace svdserve::cli {
namespace {

namespace fs = std::filesystem;
using testing::contains;

class Commands : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "in" / "sub");
    write_file_bytes(root_ / "in" / "a.png", "6x4x3");
    write_file_bytes(root_ / "in" / "a.jpg", "5x5x1");  // Same stem as a.png.
    write_file_bytes(root_ / "in" / "broken.png", "garbage");
    write_file_bytes(root_ / "in" / "sub" / "c.PNG", "3x2x4");
  }

  testing::CliOutcome run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", server_.address()});
    return testing::run_cli(args);
  }

  testing::FakeServer server_;
  testing::TempFolder folder_{"svdserve_commands_test"};
  const fs::path& root_ = folder_.path();
};

TEST_F(Commands, DecomposeOneFileUsesItsNameAsId) {
  const auto outcome = run({"decompose", (root_ / "in" / "a.png").string(), "--max-rank", "4"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "id a.png: 6x4x3, rank kept 4")) << outcome.out;
  EXPECT_EQ(run({"decompose", (root_ / "in" / "a.png").string(), "--id", "custom"}).code, 0);
  EXPECT_EQ(server_.service().image_count(), 2u);
}

// Ids are file names relative to the folder: a prefix keeps two folders' a.png apart.
TEST_F(Commands, DecomposeIdPrefixKeepsFoldersApart) {
  const auto outcome = run({"decompose", (root_ / "in" / "a.png").string(), "--id-prefix", "set1/"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "id set1/a.png: 6x4x3")) << outcome.out;
  EXPECT_EQ(run({"decompose", (root_ / "in" / "a.png").string(), "--id-prefix", "set2/"}).code, 0);
  EXPECT_EQ(server_.service().image_count(), 2u) << "two images, not one replaced";
}

TEST_F(Commands, DecomposeOneBadFileReportsTheServerError) {
  const auto outcome = run({"decompose", (root_ / "in" / "broken.png").string()});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_EQ(outcome.err, "error: INVALID_ARGUMENT: cannot decode the image\n");
}

TEST_F(Commands, DecomposeFolderCountsFailures) {
  const auto outcome = run({"decompose", (root_ / "in").string(), "--recursive", "-c", "2"});
  EXPECT_EQ(outcome.code, 1);  // broken.png
  EXPECT_TRUE(contains(outcome.out, "decomposed 3 of 4 images (1 failed)")) << outcome.out;
  EXPECT_TRUE(contains(outcome.err, "ok    sub/c.PNG")) << outcome.err;
  EXPECT_TRUE(contains(outcome.err, "FAIL  broken.png: INVALID_ARGUMENT")) << outcome.err;
  EXPECT_EQ(server_.service().image_count(), 3u);
}

TEST_F(Commands, ReconstructWritesRawOrLocallyEncodedOrServerPng) {
  ASSERT_EQ(run({"decompose", (root_ / "in" / "a.png").string()}).code, 0);

  auto outcome = run({"reconstruct", "a.png", "--rank", "2", "-o", (root_ / "x.u8").string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "rank 2, relative error 0.750000")) << outcome.out;
  EXPECT_EQ(read_file_bytes(root_ / "x.u8"), std::string(6 * 4 * 3, '\2'));

  outcome = run({"reconstruct", "a.png", "--rank", "2", "-o", (root_ / "x.bmp").string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(read_file_bytes(root_ / "x.bmp").substr(0, 2), "BM");  // BMP, encoded here.

  outcome = run({"--json", "reconstruct", "a.png", "--energy", "0.5", "-o", (root_ / "x.png").string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(read_file_bytes(root_ / "x.png"), "PNG:a.png:8");  // As the server sent it.
  EXPECT_TRUE(contains(outcome.out, "\"format\": \"png\"")) << outcome.out;

  outcome = run({"reconstruct", "a.png", "--rank", "99", "-o", (root_ / "y.png").string()});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_EQ(outcome.err, "error: INVALID_ARGUMENT: rank out of range\n");
  EXPECT_FALSE(fs::exists(root_ / "y.png"));
}

// --format jpeg (or a .jpg name) asks the server for a JPEG at --jpeg-quality, written as sent.
TEST_F(Commands, ReconstructCompressAndRunWriteServerJpeg) {
  ASSERT_EQ(run({"decompose", (root_ / "in" / "a.png").string()}).code, 0);

  auto outcome = run({"--json", "reconstruct", "a.png", "--rank", "2", "--format", "jpeg", "--jpeg-quality",
                      "30", "-o", (root_ / "x.bin").string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(read_file_bytes(root_ / "x.bin"), "JPEG:a.png:2:q30");
  EXPECT_TRUE(contains(outcome.out, "\"format\": \"jpeg\"")) << outcome.out;

  outcome = run({"reconstruct", "a.png", "--rank", "3", "-o", (root_ / "x.JPG").string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(read_file_bytes(root_ / "x.JPG"), "JPEG:a.png:3:q0");  // the server's default quality

  outcome = run({"compress", (root_ / "in" / "a.png").string(), "--rank", "2", "--format", "jpg",
                 "--jpeg-quality", "100", "-o", (root_ / "c.jpeg").string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(read_file_bytes(root_ / "c.jpeg"), "JPEG:compressed:2:q100");

  const auto out_dir = root_ / "out";
  outcome = run({"run", (root_ / "in" / "a.png").string(), "--rank", "1,2", "--format", "jpeg",
                 "--jpeg-quality", "75", "-o", out_dir.string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(read_file_bytes(out_dir / "a_k1.jpg"), "JPEG:a.png:1:q75");
  EXPECT_EQ(read_file_bytes(out_dir / "a_k2.jpg"), "JPEG:a.png:2:q75");
  EXPECT_FALSE(fs::exists(out_dir / "a_k1.png"));
}

TEST_F(Commands, JpegQualityIsCheckedBeforeAnyCall) {
  ASSERT_EQ(run({"decompose", (root_ / "in" / "a.png").string()}).code, 0);
  const fs::path out = root_ / "x.jpg";
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--jpeg-quality", "101"}, {"--jpeg-quality", "0"},
        {"--jpeg-quality", "50", "--format", "png"}}) {
    std::vector<std::string> args{"reconstruct", "a.png", "--rank", "2", "-o", out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto outcome = run(args);
    EXPECT_EQ(outcome.code, 2) << extra.back() << ": " << outcome.err;
    EXPECT_TRUE(contains(outcome.err, "--jpeg-quality")) << outcome.err;
  }
  EXPECT_FALSE(fs::exists(out));
  const auto outcome = run({"run", (root_ / "in" / "a.png").string(), "--rank", "1", "--format", "f32", "-o",
                            (root_ / "out").string()});
  EXPECT_EQ(outcome.code, 2) << outcome.err;
}

TEST_F(Commands, CompressIsOneCall) {
  const auto outcome =
      run({"compress", (root_ / "in" / "a.png").string(), "--rank", "3", "-o", (root_ / "c.f32").string(),
           "--format", "f32"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(fs::file_size(root_ / "c.f32"), 6u * 4 * 3 * sizeof(float));
  EXPECT_EQ(server_.service().image_count(), 0u);
}

TEST_F(Commands, RunWritesEveryImageAtEveryRank) {
  const auto out_dir = root_ / "out";
  const auto outcome = run({"run", (root_ / "in").string(), "--recursive", "--rank", "1,2,8", "-o",
                            out_dir.string(), "--concurrency", "3"});
  EXPECT_EQ(outcome.code, 1) << outcome.err;  // broken.png fails to decompose.
  EXPECT_TRUE(contains(outcome.out, "images 4 (3 decomposed), ranks 1,2,8, files written 9")) << outcome.out;
  for (const char* name : {"a_png_k1.png", "a_jpg_k2.png", "sub/c_k8.png"}) {
    EXPECT_TRUE(fs::exists(out_dir / name)) << name;
  }
  EXPECT_EQ(read_file_bytes(out_dir / "sub" / "c_k8.png"), "PNG:sub/c.PNG:8");
}

TEST_F(Commands, RunReportsItemsTheServerRefused) {
  const auto outcome =
      run({"--json", "run", (root_ / "in" / "a.png").string(), "--rank", "4,9", "-o", (root_ / "out").string()});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.out, "\"files_written\": 1")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "INVALID_ARGUMENT: rank out of range")) << outcome.out;
}

TEST_F(Commands, StoreCommands) {
  ASSERT_EQ(run({"decompose", (root_ / "in" / "a.png").string()}).code, 0);
  auto outcome = run({"list"});
  EXPECT_EQ(outcome.code, 0);
  EXPECT_TRUE(contains(outcome.out, "a.png")) << outcome.out;
  // The fake server answers pages of two: list follows them all.
  for (const char* name : {"a.jpg", "sub/c.PNG"}) {
    ASSERT_EQ(run({"decompose", (root_ / "in" / name).string(), "--id", name}).code, 0);
  }
  ASSERT_EQ(run({"decompose", (root_ / "in" / "a.png").string(), "--id", "z"}).code, 0);
  outcome = run({"list"});
  EXPECT_EQ(outcome.code, 0);
  for (const char* id : {"a.png", "a.jpg", "sub/c.PNG", "z"}) {
    EXPECT_TRUE(contains(outcome.out, id)) << id << " missing from\n" << outcome.out;
  }
  EXPECT_TRUE(contains(outcome.out, "4 images")) << outcome.out;
  outcome = run({"--json", "list"});
  EXPECT_EQ(outcome.code, 0);
  EXPECT_TRUE(contains(outcome.out, "\"z\"")) << outcome.out;
  outcome = run({"--json", "info", "a.png", "--singular-values"});
  EXPECT_EQ(outcome.code, 0);
  EXPECT_TRUE(contains(outcome.out, "\"rank_kept\": 8")) << outcome.out;
  EXPECT_EQ(run({"delete", "a.png"}).code, 0);
  outcome = run({"delete", "a.png"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_EQ(outcome.err, "error: NOT_FOUND: no image 'a.png'\n");
}

TEST_F(Commands, HealthAndServerInfo) {
  auto outcome = run({"health"});
  EXPECT_EQ(outcome.code, 0);
  EXPECT_EQ(outcome.out, "SERVING\n");
  server_.server().GetHealthCheckService()->SetServingStatus(false);
  outcome = run({"health"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_EQ(outcome.out, "NOT_SERVING\n");

  outcome = run({"--json", "server-info"});
  EXPECT_EQ(outcome.code, 0);
  // 64-bit integers are JSON numbers, not protobuf's quoted strings; strings stay strings.
  EXPECT_TRUE(contains(outcome.out, "\"memory_budget_bytes\": 1099511627776")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "\"started_unix_ms\": -5")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "\"version\": \"fake\"")) << outcome.out;
  outcome = run({"server-info"});
  EXPECT_EQ(outcome.code, 0);
  EXPECT_TRUE(contains(outcome.out, "fake")) << outcome.out;
  outcome = run({"stats"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(outcome.err.starts_with("error: UNIMPLEMENTED")) << outcome.err;
}

TEST_F(Commands, BenchCountsRequestsAndCleansUp) {
  const auto json_file = root_ / "bench.json";
  const auto outcome = run({"bench", "--image", (root_ / "in" / "a.png").string(), "--rank", "2", "--count", "40",
                            "--concurrency", "4", "--warmup", "4", "--json", json_file.string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "requests   40 (40 ok, 0 failed)")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "latency ms p50")) << outcome.out;
  const std::string json = read_file_bytes(json_file);
  EXPECT_TRUE(contains(json, "\"requests\": 40")) << json;
  EXPECT_TRUE(contains(json, "\"id\": \"bench-a\"")) << json;
  // a.png is 6x4x3: the u8 pixels (72 bytes) and the response's other fields.
  EXPECT_FALSE(contains(json, "\"response_bytes\": 0,")) << json;
  EXPECT_TRUE(contains(outcome.out, "bytes      request ")) << outcome.out;
  EXPECT_EQ(server_.service().image_count(), 0u);  // bench-a was deleted.
}

TEST_F(Commands, BenchCountsErrorsByCode) {
  const auto outcome = run({"bench", "--op", "compress", "--image", (root_ / "in" / "a.png").string(), "--rank",
                            "99", "--duration", "0.2", "--json", "-"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.out, "\"INVALID_ARGUMENT\": ")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "\"succeeded\": 0")) << outcome.out;
}

TEST_F(Commands, BenchReconstructOfSeveralIdsAsksForEachAndCleansUp) {
  const auto outcome = run({"bench", "--image", (root_ / "in" / "a.png").string(), "--rank", "2", "--ids", "3",
                            "--count", "12", "--concurrency", "3", "--json", "-"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "\"succeeded\": 12")) << outcome.out;
  EXPECT_EQ(server_.service().image_count(), 0u);  // bench-a-0 .. bench-a-2 were deleted
  EXPECT_EQ(run({"bench", "--id", "x", "--ids", "2"}).code, 2);
  EXPECT_EQ(run({"bench", "--op", "compress", "--image", (root_ / "in" / "a.png").string(), "--ids", "2"}).code, 2);
}

TEST_F(Commands, BenchDecomposeUsesOneIdPerCaller) {
  const auto outcome = run({"bench", "--op", "decompose", "--image", (root_ / "in" / "a.png").string(), "--count",
                            "10", "--concurrency", "2"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_EQ(server_.service().image_count(), 0u);
}

TEST_F(Commands, BenchStreamSendsItsItemsThroughOneStreamPerRequest) {
  const auto outcome = run({"bench", "--op", "stream", "--image", (root_ / "in" / "a.png").string(), "--rank", "2",
                            "--count", "6", "--stream-items", "4", "--concurrency", "2", "--json", "-"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "\"op\": \"stream\"")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "\"succeeded\": 6")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "\"images_per_request\": 4")) << outcome.out;
  EXPECT_EQ(server_.service().image_count(), 0u);  // bench-a was deleted.
}

TEST_F(Commands, BenchStreamCountsAFailedItemAsAFailedRequest) {
  // Rank 99 is above what the fake keeps: every item is answered INVALID_ARGUMENT in its response.
  const auto outcome = run({"bench", "--op", "stream", "--image", (root_ / "in" / "a.png").string(), "--rank", "99",
                            "--count", "3", "--stream-items", "2", "--json", "-"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.out, "\"INVALID_ARGUMENT\": 3")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "\"succeeded\": 0")) << outcome.out;
}

TEST_F(Commands, BenchStreamItemsNeedTheStreamOp) {
  const auto outcome = run({"bench", "--image", (root_ / "in" / "a.png").string(), "--stream-items", "4"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(contains(outcome.err, "--stream-items applies to --op stream")) << outcome.err;
}

TEST_F(Commands, BenchEchoIsSizedLikeTheReconstruction) {
  // a.png is 6x4x3: a u8 reconstruction carries 72 pixel bytes, so echo asks for about as many.
  const auto outcome = run({"bench", "--op", "echo", "--image", (root_ / "in" / "a.png").string(), "--rank", "2",
                            "--count", "12", "--concurrency", "3", "--json", "-"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "\"op\": \"echo\"")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "\"succeeded\": 12")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "\"connections\": 3")) << outcome.out;
  EXPECT_EQ(server_.service().echo_calls(), 12u);
  EXPECT_EQ(server_.service().image_count(), 0u);  // bench-a, made to size the echo, was deleted.
}

TEST_F(Commands, BenchSweepRunsOpAndEchoAtEachConcurrency) {
  const auto json_file = root_ / "sweep.json";
  const auto outcome = run({"bench", "--image", (root_ / "in" / "a.png").string(), "--rank", "2", "--sweep", "1,2,4",
                            "--count", "8", "--connections", "2", "--json", json_file.string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "bench reconstruct (op) vs echo")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, "min(C, 2) connections; 8 requests per run")) << outcome.out;
  for (const char* level : {"\n    1 ", "\n    2 ", "\n    4 "}) {
    EXPECT_TRUE(contains(outcome.out, level)) << level << "\n" << outcome.out;
  }
  EXPECT_EQ(server_.service().echo_calls(), 3u * 8u);
  const std::string json = read_file_bytes(json_file);
  EXPECT_TRUE(contains(json, "\"rows\": [")) << json;
  EXPECT_TRUE(contains(json, "\"concurrency\": 4")) << json;
  EXPECT_TRUE(contains(json, "\"op_to_echo_ratio\": ")) << json;
  EXPECT_FALSE(contains(json, "\"succeeded\": 0")) << json;
  EXPECT_EQ(server_.service().image_count(), 0u);
}

TEST_F(Commands, BenchSweepStopsWhenTheRealCallFails) {
  // Rank 99 is above what the fake keeps: the call that sizes the echo fails, nothing is measured.
  const auto outcome = run({"bench", "--image", (root_ / "in" / "a.png").string(), "--rank", "99", "--sweep", "1",
                            "--count", "4"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(outcome.err.starts_with("error: INVALID_ARGUMENT")) << outcome.err;
  EXPECT_EQ(server_.service().echo_calls(), 0u);
  EXPECT_EQ(server_.service().image_count(), 0u);
}

// The fake keeps values 8, 7, ..., 1 in each channel: shares 64/204, 113/204, ..., 190/204 (93%)
// at rank 5, 203/204 (99.5%) at 7, all at 8.
TEST_F(Commands, SpectrumWritesThePlotAndPrintsTheEnergyRanks) {
  ASSERT_EQ(run({"decompose", (root_ / "in" / "a.png").string()}).code, 0);
  const auto plot_file = root_ / "spectrum.png";
  auto outcome = run({"spectrum", "a.png", "-o", plot_file.string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "energy 90%: rank 5\nenergy 99%: rank 7\nenergy 99.9%: rank 8\n")) << outcome.out;
  const cv::Mat plot = cv::imread(plot_file.string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(plot.empty());
  EXPECT_EQ(plot.cols, 960);
  EXPECT_EQ(plot.rows, 640);
  EXPECT_EQ(plot.channels(), 3);

  outcome = run({"--json", "spectrum", "a.png", "-o", (root_ / "spectrum.bmp").string()});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, R"("energy": 0.99,)")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, R"("rank": 7)")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, R"("channels": 3)")) << outcome.out;
  EXPECT_EQ(read_file_bytes(root_ / "spectrum.bmp").substr(0, 2), "BM");
}

TEST_F(Commands, SpectrumErrors) {
  auto outcome = run({"spectrum", "nope.png", "-o", (root_ / "s.png").string()});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_EQ(outcome.err, "error: NOT_FOUND: no image 'nope.png'\n");
  EXPECT_FALSE(fs::exists(root_ / "s.png"));

  ASSERT_EQ(run({"decompose", (root_ / "in" / "a.png").string()}).code, 0);
  outcome = run({"spectrum", "a.png", "-o", (root_ / "s.xyz").string()});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(contains(outcome.err, "-o needs an image file name")) << outcome.err;
  EXPECT_FALSE(fs::exists(root_ / "s.xyz"));
  EXPECT_EQ(run({"spectrum", "a.png"}).code, 2);
  EXPECT_EQ(run({"spectrum", "-o", (root_ / "s.png").string()}).code, 2);
}

// The sheet's name is checked before any call.
TEST_F(Commands, RunContactSheetNeedsAnImageName) {
  const auto outcome = run({"run", (root_ / "in" / "a.png").string(), "--rank", "1", "-o", (root_ / "out").string(),
                            "--contact-sheet", (root_ / "sheet.txt").string()});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(contains(outcome.err, "--contact-sheet needs an image file name")) << outcome.err;
  EXPECT_EQ(server_.service().image_count(), 0u);
  EXPECT_FALSE(fs::exists(root_ / "out"));
}

// A sheet that could pass 65,535 pixels on a side is refused before any call.
TEST_F(Commands, RunContactSheetTooLargeToWriteIsAUsageError) {
  const auto many = root_ / "many";
  fs::create_directories(many);
  for (int i = 0; i < 20; ++i) write_file_bytes(many / (std::to_string(i) + ".png"), "6x4x3");
  const std::vector<std::string> args{"run", many.string(), "--rank", "1", "-o", (root_ / "out").string(),
                                      "--contact-sheet", (root_ / "sheet.png").string(), "--tile-size"};
  auto too_large = args;
  too_large.push_back("4096");  // 20 rows of 4096 + captions
  const auto outcome = run(too_large);
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(contains(outcome.err, "above 65535 on a side")) << outcome.err;
  EXPECT_EQ(server_.service().image_count(), 0u);

  auto fits = args;
  fits.push_back("1024");
  EXPECT_NE(run(fits).code, 2);
}

// The fake's images are not pictures the client can decode: the outputs are written, the sheet
// fails, and that is a local failure (exit code 1).
TEST_F(Commands, RunContactSheetOfAnUndecodableOriginalFails) {
  const auto out_dir = root_ / "out";
  const auto outcome = run({"run", (root_ / "in" / "a.png").string(), "--rank", "1", "-o", out_dir.string(),
                            "--format", "png", "--contact-sheet", (root_ / "sheet.png").string()});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, "error: contact sheet: cannot decode")) << outcome.err;
  EXPECT_TRUE(fs::exists(out_dir / "a_k1.png"));
  EXPECT_FALSE(fs::exists(root_ / "sheet.png"));
}

}  // namespace
}  // namespace svdserve::cli
