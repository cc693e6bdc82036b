#include "client/cli/contact_sheet.hpp"

#include <algorithm>

#include <opencv2/imgproc.hpp>

#include "client/text_format.hpp"

namespace svdserve::cli {
namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
constexpr double kFontScale = 0.45;
constexpr int kCaptionIndentPx = 2;
const cv::Scalar kFailedTileColour{200, 200, 200};
const cv::Scalar kTileBorderColour{160, 160, 160};

cv::Mat as_bgr(const cv::Mat& image) {
  if (image.channels() == 3) return image;
  cv::Mat bgr;
  cv::cvtColor(image, bgr, image.channels() == 4 ? cv::COLOR_BGRA2BGR : cv::COLOR_GRAY2BGR);
  return bgr;
}

// One caption line at the top-left of `line_box`, shrunk to fit its width.
void put_caption(cv::Mat& sheet, const std::string& text, cv::Rect line_box) {
  int baseline = 0;
  const cv::Size size = cv::getTextSize(text, kFont, kFontScale, 1, &baseline);
  const int room = line_box.width - 2 * kCaptionIndentPx;
  const double scale = size.width > room ? kFontScale * room / size.width : kFontScale;
  cv::putText(sheet, text, {line_box.x + kCaptionIndentPx, line_box.y + line_box.height - 4}, kFont, scale,
              kCaptionColour, 1, cv::LINE_AA);
}

// Draws the tile at the top of the cell and its caption lines under the tallest tile's bottom.
void draw_cell(cv::Mat& sheet, cv::Rect cell, const cv::Mat& image, int max_tile_side_px, cv::Size failed_size,
               const std::vector<std::string>& caption) {
  const int tiles_height = cell.height - kCaptionHeightPx;
  if (image.empty()) {
    cv::rectangle(sheet, cv::Rect(cell.tl(), failed_size), kFailedTileColour, cv::FILLED);
  } else {
    const cv::Mat tile = sheet_tile(image, max_tile_side_px);
    tile.copyTo(sheet(cv::Rect(cell.x, cell.y, tile.cols, tile.rows)));
    cv::rectangle(sheet, cv::Rect(cell.x, cell.y, tile.cols, tile.rows), kTileBorderColour, 1);
  }
  for (std::size_t line = 0; line < caption.size(); ++line) {
    put_caption(sheet, caption[line],
                {cell.x, cell.y + tiles_height + static_cast<int>(line) * kCaptionLinePx, cell.width,
                 kCaptionLinePx});
  }
}

std::string percent_text(double part, double whole) {
  return whole > 0 ? fixed_text(100.0 * part / whole, 1) + "%" : "-";
}

}  // namespace

cv::Size2d largest_sheet_size(std::size_t images, std::size_t ranks, int max_tile_side_px) {
  const double cell_width = std::max(max_tile_side_px, kMinCellWidthPx);
  const double cell_height = max_tile_side_px + kCaptionHeightPx;
  const double columns = static_cast<double>(ranks) + 1;  // the original first
  const auto rows = static_cast<double>(images);
  return {columns * cell_width + (columns + 1) * kSheetGapPx, rows * cell_height + (rows + 1) * kSheetGapPx};
}

cv::Mat sheet_tile(const cv::Mat& image, int max_tile_side_px) {
  cv::Mat bgr = as_bgr(image);
  const int longer = std::max(bgr.cols, bgr.rows);
  if (longer <= max_tile_side_px) return bgr;
  const double scale = static_cast<double>(max_tile_side_px) / longer;
  const cv::Size size(std::max(1, static_cast<int>(bgr.cols * scale + 0.5)),
                      std::max(1, static_cast<int>(bgr.rows * scale + 0.5)));
  cv::Mat scaled;
  cv::resize(bgr, scaled, size, 0, 0, cv::INTER_AREA);
  return scaled;
}

cv::Size sheet_cell_size(std::span<const SheetRow> rows, int max_tile_side_px) {
  cv::Size largest(0, 0);
  const auto widen = [&](const cv::Mat& image) {
    if (image.empty()) return;
    const cv::Size size = sheet_tile(image, max_tile_side_px).size();
    largest.width = std::max(largest.width, size.width);
    largest.height = std::max(largest.height, size.height);
  };
  for (const auto& row : rows) {
    widen(row.original);
    for (const auto& rank : row.ranks) widen(rank.pixels);
  }
  return {std::max(largest.width, kMinCellWidthPx), largest.height + kCaptionHeightPx};
}

cv::Mat draw_contact_sheet(std::span<const SheetRow> rows, int max_tile_side_px) {
  const cv::Size cell = sheet_cell_size(rows, max_tile_side_px);
  std::size_t columns = 0;
  for (const auto& row : rows) columns = std::max(columns, 1 + row.ranks.size());
  const int column_count = static_cast<int>(columns);
  const int row_count = static_cast<int>(rows.size());
  cv::Mat sheet(row_count * cell.height + (row_count + 1) * kSheetGapPx,
                column_count * cell.width + (column_count + 1) * kSheetGapPx, CV_8UC3, kSheetBackground);

  const auto cell_at = [&](int row, int column) {
    return cv::Rect(kSheetGapPx + column * (cell.width + kSheetGapPx), kSheetGapPx + row * (cell.height + kSheetGapPx),
                    cell.width, cell.height);
  };
  for (int r = 0; r < row_count; ++r) {
    const SheetRow& row = rows[static_cast<std::size_t>(r)];
    const cv::Size tile_size = row.original.empty() ? cv::Size(cell.width, cell.height - kCaptionHeightPx)
                                                    : sheet_tile(row.original, max_tile_side_px).size();
    const cv::Size original_size = row.original_size.empty() ? row.original.size() : row.original_size;
    draw_cell(sheet, cell_at(r, 0), row.original, max_tile_side_px, tile_size,
              {row.name, "original " + std::to_string(original_size.width) + "x" + std::to_string(original_size.height),
               "pixels " + bytes_text(row.original_bytes) + " (100%)"});
    for (std::size_t i = 0; i < row.ranks.size(); ++i) {
      const RankTile& tile = row.ranks[i];
      const std::string title = "k = " + std::to_string(tile.rank);
      std::vector<std::string> caption =
          tile.pixels.empty()
              ? std::vector<std::string>{title, "failed"}
              : std::vector<std::string>{
                    title, "rel. error " + fixed_text(tile.relative_error, 4),
                    "kept " + bytes_text(tile.bytes_kept) + " (" +
                        percent_text(static_cast<double>(tile.bytes_kept), static_cast<double>(row.original_bytes)) +
                        ")"};
      draw_cell(sheet, cell_at(r, static_cast<int>(i) + 1), tile.pixels, max_tile_side_px, tile_size, caption);
    }
  }
  return sheet;
}

}  // namespace svdserve::cli
