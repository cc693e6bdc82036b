#include "client/cli/contact_sheet_files.hpp"

#include <stdexcept>

#include <opencv2/imgcodecs.hpp>

#include "client/cli/reconstruction_cost.hpp"

namespace svdserve::cli {
namespace {

constexpr double kU16ToU8 = 255.0 / 65535.0;

cv::Mat read_8bit(const std::filesystem::path& file) {
  const cv::Mat decoded = cv::imread(file.string(), cv::IMREAD_UNCHANGED);
  if (decoded.empty() || decoded.depth() == CV_8U) return decoded;
  cv::Mat converted;
  decoded.convertTo(converted, CV_8U, decoded.depth() == CV_16U ? kU16ToU8 : 1.0);
  return converted;
}

}  // namespace

SheetRow read_sheet_row(const std::string& name, const std::filesystem::path& original,
                        const std::vector<RankFile>& ranks, int max_tile_side_px) {
  const cv::Mat pixels = read_8bit(original);
  if (pixels.empty()) throw std::runtime_error("cannot decode " + original.string() + " for the contact sheet");
  const auto width = static_cast<std::uint32_t>(pixels.cols);
  const auto height = static_cast<std::uint32_t>(pixels.rows);
  const auto channels = static_cast<std::uint32_t>(pixels.channels());
  SheetRow row{.name = name,
               .original = sheet_tile(pixels, max_tile_side_px),
               .original_size = pixels.size(),
               .original_bytes = pixel_bytes(width, height, channels),
               .ranks = {}};
  for (const RankFile& rank_file : ranks) {
    RankTile tile{.rank = rank_file.rank,
                  .pixels = {},
                  .relative_error = 0,
                  .bytes_kept = factor_bytes(width, height, channels, rank_file.rank)};
    if (!rank_file.file.empty()) {
      const cv::Mat reconstruction = read_8bit(rank_file.file);
      if (reconstruction.size() == pixels.size() && reconstruction.channels() == pixels.channels()) {
        tile.relative_error = relative_error(pixels, reconstruction);
        tile.pixels = sheet_tile(reconstruction, max_tile_side_px);
      }
    }
    row.ranks.push_back(std::move(tile));
  }
  return row;
}

}  // namespace svdserve::cli
