#pragma once
// A contact sheet of reconstructions: one row per image, the original first and then each rank's
// reconstruction, every tile captioned (k, relative error, bytes kept of the original's).
//
// Layout: every cell is cell_width x cell_height and cells are kSheetGapPx apart and from the
// edges, so a sheet of R rows and C columns (C: the longest row's tiles) is
//   (C * cell_width + (C + 1) * gap) x (R * cell_height + (R + 1) * gap)
// cell_width:  the widest tile of the sheet, at least kMinCellWidthPx (room for the captions);
// cell_height: the tallest tile plus kCaptionHeightPx.
// Tiles are scaled down (never up) to at most max_tile_side_px on their longer side.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace svdserve::cli {

inline constexpr int kDefaultMaxTileSidePx = 256;
inline constexpr int kMinCellWidthPx = 216;
inline constexpr int kCaptionLinePx = 17;
inline constexpr int kCaptionLines = 3;
inline constexpr int kCaptionHeightPx = kCaptionLines * kCaptionLinePx + 6;
inline constexpr int kSheetGapPx = 12;
// JPEG's limit on a side (PNG's is higher, but a sheet that large is no picture to look at).
inline constexpr int kMaxSheetSidePx = 65'535;
inline const cv::Scalar kSheetBackground{255, 255, 255};
inline const cv::Scalar kCaptionColour{20, 20, 20};

struct RankTile {
  std::uint32_t rank = 0;
  cv::Mat pixels{};              // 8-bit, 1, 3 or 4 channels; empty: the reconstruction failed.
  double relative_error = 0;     // Against the original's pixels.
  std::uint64_t bytes_kept = 0;  // factor_bytes() at this rank.
};

struct SheetRow {
  std::string name;                   // The image's id, shown under the original.
  cv::Mat original{};                 // 8-bit, 1, 3 or 4 channels; full size or a sheet_tile().
  cv::Size original_size{};           // For the caption; empty: original's own size.
  std::uint64_t original_bytes = 0;   // pixel_bytes() of the original.
  std::vector<RankTile> ranks{};
};

// The image as a tile: 8-bit BGR, scaled down to fit max_tile_side_px (INTER_AREA).
[[nodiscard]] cv::Mat sheet_tile(const cv::Mat& image, int max_tile_side_px = kDefaultMaxTileSidePx);

// The size of the cell every tile of these rows gets.
[[nodiscard]] cv::Size sheet_cell_size(std::span<const SheetRow> rows,
                                       int max_tile_side_px = kDefaultMaxTileSidePx);

// The largest sheet `images` rows of `ranks` reconstructions each can give (every tile at the
// largest side), checked before any call so that a sheet too large to write fails first.
[[nodiscard]] cv::Size2d largest_sheet_size(std::size_t images, std::size_t ranks, int max_tile_side_px);

// The sheet, 8-bit BGR, laid out as above; an empty cell where a row has fewer tiles, a grey
// tile captioned "failed" where a reconstruction failed.
[[nodiscard]] cv::Mat draw_contact_sheet(std::span<const SheetRow> rows,
                                         int max_tile_side_px = kDefaultMaxTileSidePx);

}  // namespace svdserve::cli
