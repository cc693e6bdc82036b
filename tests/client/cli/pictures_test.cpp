// svdserve-cli's pictures against a real server (CPU backend) on a loopback port: run
// --contact-sheet and spectrum on the real test photos.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "client/cli/contact_sheet.hpp"
#include "client/cli/energy_ranks.hpp"
#include "client/cli/spectrum_plot.hpp"
#include "run_cli.hpp"
#include "server_fixture.hpp"
#include "temp_folder.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::cli {
namespace {

namespace fs = std::filesystem;
using testing::contains;

fs::path test_image(const std::string& name) { return fs::path(svdserve::test::test_images_dir()) / name; }

class CliPictures : public testing::ServerFixture {
 protected:
  void SetUp() override { start(); }

  testing::CliOutcome run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", target()});
    return testing::run_cli(args);
  }

  // The size draw_contact_sheet gives rows of these originals with `ranks` tiles each.
  static cv::Size expected_sheet_size(const std::vector<fs::path>& originals, int ranks) {
    std::vector<SheetRow> rows;
    for (const auto& file : originals) {
      rows.push_back(SheetRow{.name = file.filename().string(),
                              .original = cv::imread(file.string(), cv::IMREAD_UNCHANGED),
                              .original_size = {},
                              .original_bytes = 0,
                              .ranks = {}});
    }
    const cv::Size cell = sheet_cell_size(rows);
    const int columns = 1 + ranks;
    const int row_count = static_cast<int>(rows.size());
    return {columns * cell.width + (columns + 1) * kSheetGapPx,
            row_count * cell.height + (row_count + 1) * kSheetGapPx};
  }

  testing::TempFolder folder_{"svdserve_cli_pictures_test"};
  const fs::path& root_ = folder_.path();
};

TEST_F(CliPictures, ContactSheetOfOnePhoto) {
  const auto sheet_file = root_ / "sheet.png";
  const auto outcome = run({"run", test_image("fruits.jpg").string(), "--rank", "2,10,40", "-o",
                            (root_ / "out").string(), "--contact-sheet", sheet_file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, "contact sheet " + sheet_file.string())) << outcome.out;

  const cv::Mat sheet = cv::imread(sheet_file.string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(sheet.empty());
  EXPECT_EQ(sheet.channels(), 3);
  EXPECT_EQ(sheet.size(), expected_sheet_size({test_image("fruits.jpg")}, 3));

  // The first tile is the photo, scaled down; the rank-40 tile is close to it, the rank-2 one
  // further off.
  const cv::Mat original_tile = sheet_tile(cv::imread(test_image("fruits.jpg").string(), cv::IMREAD_UNCHANGED));
  const int cell_width = std::max(original_tile.cols, kMinCellWidthPx);
  const auto tile_at = [&](int column) {
    return sheet(cv::Rect(kSheetGapPx + column * (cell_width + kSheetGapPx) + 1, kSheetGapPx + 1,
                          original_tile.cols - 2, original_tile.rows - 2));
  };
  const cv::Mat original_inner = original_tile(cv::Rect(1, 1, original_tile.cols - 2, original_tile.rows - 2));
  EXPECT_EQ(cv::norm(tile_at(0), original_inner, cv::NORM_INF), 0.0);
  const double rank2_distance = cv::norm(tile_at(1), original_inner, cv::NORM_L2);
  const double rank40_distance = cv::norm(tile_at(3), original_inner, cv::NORM_L2);
  EXPECT_GT(rank2_distance, 2 * rank40_distance);
}

// One row per image, in the order run takes them (sorted by path).
TEST_F(CliPictures, ContactSheetOfAFolderHasARowPerImage) {
  const auto in = root_ / "in";
  fs::create_directories(in);
  fs::copy_file(test_image("fruits.jpg"), in / "a.jpg");
  fs::copy_file(test_image("pic1.png"), in / "b.png");
  const auto sheet_file = root_ / "sheet.jpg";
  const auto outcome = run({"--json", "run", in.string(), "--rank", "5,20", "-o", (root_ / "out").string(),
                            "--contact-sheet", sheet_file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  EXPECT_TRUE(contains(outcome.out, R"("contact_sheet": {)")) << outcome.out;
  EXPECT_TRUE(contains(outcome.out, R"("ok": true)")) << outcome.out;

  const cv::Mat sheet = cv::imread(sheet_file.string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(sheet.empty());
  EXPECT_EQ(sheet.channels(), 3);
  EXPECT_EQ(sheet.size(), expected_sheet_size({in / "a.jpg", in / "b.png"}, 2));
}

// A rank above what was kept fails on the server: the files of the others are written, the sheet
// shows a failed tile, the exit code says something failed.
TEST_F(CliPictures, ContactSheetWithAFailedRank) {
  const auto sheet_file = root_ / "sheet.png";
  const auto outcome = run({"run", test_image("fruits.jpg").string(), "--rank", "4,64", "--max-rank", "16", "-o",
                            (root_ / "out").string(), "--contact-sheet", sheet_file.string()});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, "INVALID_ARGUMENT")) << outcome.err;
  const cv::Mat sheet = cv::imread(sheet_file.string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(sheet.empty());
  EXPECT_EQ(sheet.size(), expected_sheet_size({test_image("fruits.jpg")}, 2));
}

// The ranks spectrum prints are the server's own choice for --energy on a full-rank decomposition.
TEST_F(CliPictures, SpectrumOfAPhoto) {
  const cv::Mat photo = cv::imread(test_image("baboon.jpg").string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(photo.empty());
  const std::string full_rank = std::to_string(std::min(photo.cols, photo.rows));
  ASSERT_EQ(run({"decompose", test_image("baboon.jpg").string(), "--max-rank", full_rank}).code, 0);

  const auto plot_file = root_ / "spectrum.png";
  const auto outcome = run({"spectrum", "baboon.jpg", "-o", plot_file.string()});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  for (const double fraction : kMarkedEnergyFractions) {
    v1::ReconstructRequest request;
    request.set_id("baboon.jpg");
    request.set_energy_fraction(fraction);
    request.set_format(v1::OUTPUT_FORMAT_RAW_U8);
    const auto reconstructed = client_->reconstruct(request);
    ASSERT_TRUE(reconstructed) << reconstructed.status().error_message();
    EXPECT_TRUE(contains(outcome.out, "energy " + energy_percent_text(fraction) + ": rank " +
                                          std::to_string(reconstructed->rank()) + "\n"))
        << outcome.out;
  }
  const cv::Mat plot = cv::imread(plot_file.string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(plot.empty());
  EXPECT_EQ(plot.size(), cv::Size(kSpectrumPlotWidthPx, kSpectrumPlotHeightPx));
  EXPECT_EQ(plot.channels(), 3);
}

TEST_F(CliPictures, SpectrumOfAnUnknownIdIsNotFound) {
  const auto outcome = run({"spectrum", "missing.png", "-o", (root_ / "s.png").string()});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(outcome.err.starts_with("error: NOT_FOUND")) << outcome.err;
  EXPECT_FALSE(fs::exists(root_ / "s.png"));
}

TEST_F(CliPictures, UnknownPictureExtensionsAreUsageErrors) {
  ASSERT_EQ(run({"decompose", test_image("fruits.jpg").string()}).code, 0);
  EXPECT_EQ(run({"spectrum", "fruits.jpg", "-o", (root_ / "s.svg").string()}).code, 2);
  const auto outcome = run({"run", test_image("fruits.jpg").string(), "--rank", "2", "-o", (root_ / "out").string(),
                            "--contact-sheet", (root_ / "sheet.pdf").string()});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_FALSE(fs::exists(root_ / "out"));
  // --tile-size goes with a contact sheet, and within its bounds.
  EXPECT_EQ(run({"run", test_image("fruits.jpg").string(), "--rank", "2", "-o", (root_ / "out").string(),
                 "--tile-size", "64"}).code,
            2);
  EXPECT_EQ(run({"run", test_image("fruits.jpg").string(), "--rank", "2", "-o", (root_ / "out").string(),
                 "--contact-sheet", (root_ / "sheet.png").string(), "--tile-size", "8"}).code,
            2);
  EXPECT_FALSE(fs::exists(root_ / "out"));
}

TEST_F(CliPictures, ContactSheetTileSize) {
  const auto sheet_file = root_ / "sheet.png";
  const auto outcome = run({"run", test_image("fruits.jpg").string(), "--rank", "3", "-o", (root_ / "out").string(),
                            "--contact-sheet", sheet_file.string(), "--tile-size", "128"});
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  const cv::Mat sheet = cv::imread(sheet_file.string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(sheet.empty());
  const cv::Mat original = cv::imread(test_image("fruits.jpg").string(), cv::IMREAD_UNCHANGED);
  const cv::Size tile = sheet_tile(original, 128).size();
  EXPECT_EQ(tile.width, 128);
  EXPECT_EQ(sheet.size(), cv::Size(2 * kMinCellWidthPx + 3 * kSheetGapPx,
                                   tile.height + kCaptionHeightPx + 2 * kSheetGapPx));
}

}  // namespace
}  // namespace svdserve::cli
