// The contact sheet's layout (sizes as contact_sheet.hpp documents them), its tiles and captions.

#include <gtest/gtest.h>

#include <vector>

#include <opencv2/core.hpp>

#include "client/cli/contact_sheet.hpp"

namespace svdserve::cli {
namespace {

cv::Mat uniform(int width, int height, int type, cv::Scalar value) { return {height, width, type, value}; }

RankTile tile_of(std::uint32_t rank, cv::Mat pixels) {
  return RankTile{.rank = rank, .pixels = std::move(pixels), .relative_error = 0.125, .bytes_kept = 4096};
}

// The number of pixels in `area` that are not the background.
int inked_pixels(const cv::Mat& sheet, cv::Rect area) {
  cv::Mat background_mask;
  cv::inRange(sheet(area), kSheetBackground, kSheetBackground, background_mask);
  return area.area() - cv::countNonZero(background_mask);
}

cv::Size expected_sheet_size(cv::Size cell, int rows, int columns) {
  return {columns * cell.width + (columns + 1) * kSheetGapPx, rows * cell.height + (rows + 1) * kSheetGapPx};
}

TEST(ContactSheet, TilesFitTheMaximumSideAndKeepTheirAspect) {
  const cv::Mat big = uniform(1024, 512, CV_8UC1, cv::Scalar(100));
  const cv::Mat tile = sheet_tile(big);
  EXPECT_EQ(tile.size(), cv::Size(kDefaultMaxTileSidePx, kDefaultMaxTileSidePx / 2));
  EXPECT_EQ(tile.type(), CV_8UC3);
  EXPECT_EQ(tile.at<cv::Vec3b>(10, 10), cv::Vec3b(100, 100, 100));
  // Small images are not scaled up; BGRA loses its alpha.
  EXPECT_EQ(sheet_tile(uniform(40, 30, CV_8UC4, cv::Scalar(1, 2, 3, 4))).size(), cv::Size(40, 30));
  EXPECT_EQ(sheet_tile(uniform(40, 30, CV_8UC4, cv::Scalar(1, 2, 3, 4))).type(), CV_8UC3);
}

// One row per image, the original then each rank; the widest and tallest tiles set the cell.
TEST(ContactSheet, SizeIsTheDocumentedGrid) {
  const cv::Mat wide = uniform(640, 320, CV_8UC3, cv::Scalar(0, 0, 200));    // tile 256x128
  const cv::Mat tall = uniform(300, 600, CV_8UC1, cv::Scalar(90));           // tile 128x256
  std::vector<SheetRow> rows = {
      SheetRow{.name = "wide.png", .original = wide, .original_size = {}, .original_bytes = 614400,
               .ranks = {tile_of(1, wide), tile_of(4, wide), tile_of(16, wide)}},
      SheetRow{.name = "tall.png", .original = tall, .original_size = {}, .original_bytes = 180000,
               .ranks = {tile_of(1, tall)}},
  };
  const cv::Size cell = sheet_cell_size(rows);
  EXPECT_EQ(cell, cv::Size(256, 256 + kCaptionHeightPx));
  const cv::Mat sheet = draw_contact_sheet(rows);
  EXPECT_EQ(sheet.type(), CV_8UC3);
  EXPECT_EQ(sheet.size(), expected_sheet_size(cell, 2, 4));

  // The first row's tiles hold the image's pixels (red), at the top-left of their cells.
  for (int column = 0; column < 4; ++column) {
    const int x = kSheetGapPx + column * (cell.width + kSheetGapPx);
    EXPECT_EQ(sheet.at<cv::Vec3b>(kSheetGapPx + 60, x + 100), cv::Vec3b(0, 0, 200)) << "column " << column;
  }
  // The second row has two tiles; its last two cells stay empty.
  const int second_row_y = kSheetGapPx * 2 + cell.height;
  EXPECT_EQ(sheet.at<cv::Vec3b>(second_row_y + 100, kSheetGapPx + 60), cv::Vec3b(90, 90, 90));
  const cv::Rect empty_cell(kSheetGapPx + 2 * (cell.width + kSheetGapPx), second_row_y, cell.width, cell.height);
  EXPECT_EQ(inked_pixels(sheet, empty_cell), 0);
}

// Each caption line has text in it: the name (or k), the error, the bytes.
TEST(ContactSheet, EveryTileIsCaptioned) {
  const cv::Mat image = uniform(64, 48, CV_8UC3, cv::Scalar(20, 120, 20));
  const std::vector<SheetRow> rows = {SheetRow{.name = "a.png", .original = image, .original_size = {},
                                               .original_bytes = 64 * 48 * 3, .ranks = {tile_of(2, image)}}};
  const cv::Size cell = sheet_cell_size(rows);
  EXPECT_EQ(cell, cv::Size(kMinCellWidthPx, 48 + kCaptionHeightPx));
  const cv::Mat sheet = draw_contact_sheet(rows);
  for (int column = 0; column < 2; ++column) {
    const int x = kSheetGapPx + column * (cell.width + kSheetGapPx);
    // Below the tile and above the captions: nothing.
    for (int line = 0; line < kCaptionLines; ++line) {
      const cv::Rect caption_line(x, kSheetGapPx + 48 + line * kCaptionLinePx, cell.width, kCaptionLinePx);
      EXPECT_GT(inked_pixels(sheet, caption_line), 20) << "column " << column << ", line " << line;
    }
  }
}

// A smaller tile size shrinks the tiles; the cells keep room for the captions.
TEST(ContactSheet, TileSizeIsAParameter) {
  const cv::Mat image = uniform(400, 300, CV_8UC3, cv::Scalar(5, 6, 7));
  const std::vector<SheetRow> rows = {SheetRow{.name = "a.png", .original = image, .original_size = {},
                                               .original_bytes = 360000, .ranks = {tile_of(1, image)}}};
  EXPECT_EQ(sheet_tile(image, 100).size(), cv::Size(100, 75));
  const cv::Size cell = sheet_cell_size(rows, 100);
  EXPECT_EQ(cell, cv::Size(kMinCellWidthPx, 75 + kCaptionHeightPx));
  EXPECT_EQ(draw_contact_sheet(rows, 100).size(), expected_sheet_size(cell, 1, 2));
  EXPECT_EQ(sheet_cell_size(rows, 300), cv::Size(300, 225 + kCaptionHeightPx));
}

// The bound checked before any call is the sheet of tiles at the largest side, and no smaller.
TEST(ContactSheet, LargestSheetSizeIsTheSheetOfLargestTiles) {
  const cv::Mat image = uniform(300, 300, CV_8UC3, cv::Scalar(9, 9, 9));
  const SheetRow row{.name = "a.png", .original = image, .original_size = {}, .original_bytes = 270000,
                     .ranks = {tile_of(1, image), tile_of(2, image)}};
  const std::vector<SheetRow> rows = {row, row, row};
  const cv::Size drawn = draw_contact_sheet(rows, 300).size();
  EXPECT_EQ(largest_sheet_size(3, 2, 300), cv::Size2d(drawn.width, drawn.height));
  EXPECT_GE(largest_sheet_size(3, 2, 400).height, drawn.height);
}

// A failed reconstruction is a grey tile with "failed" under it, the columns still aligned.
TEST(ContactSheet, FailedReconstructionIsAGreyTile) {
  const cv::Mat image = uniform(100, 80, CV_8UC3, cv::Scalar(0, 0, 0));
  const std::vector<SheetRow> rows = {SheetRow{.name = "a.png", .original = image, .original_size = {},
                                               .original_bytes = 24000, .ranks = {tile_of(3, cv::Mat())}}};
  const cv::Mat sheet = draw_contact_sheet(rows);
  const cv::Size cell = sheet_cell_size(rows);
  EXPECT_EQ(sheet.size(), expected_sheet_size(cell, 1, 2));
  const int x = 2 * kSheetGapPx + cell.width;
  EXPECT_EQ(sheet.at<cv::Vec3b>(kSheetGapPx + 40, x + 50), cv::Vec3b(200, 200, 200));
  const cv::Rect second_line(x, kSheetGapPx + 80 + kCaptionLinePx, cell.width, kCaptionLinePx);
  EXPECT_GT(inked_pixels(sheet, second_line), 20);
}

}  // namespace
}  // namespace svdserve::cli
