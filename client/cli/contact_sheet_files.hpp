#pragma once
// A contact sheet row from files: an image as the server decodes it and the reconstructions
// `run` wrote of it, read back so the tiles and errors are of the files written (for JPEG
// outputs, after JPEG's loss). Each row keeps only tiles, not the full-size pixels.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "client/cli/contact_sheet.hpp"

namespace svdserve::cli {

struct RankFile {
  std::uint32_t rank = 0;
  std::filesystem::path file{};  // Empty when the reconstruction failed.
};

// The original is decoded unchanged (as the server does) and shown on the 8-bit scale. A
// reconstruction that cannot be read, or whose shape is not the original's, gets a failed tile.
// Tiles are sheet_tile()s of max_tile_side_px. Throws std::runtime_error when the original cannot
// be read.
[[nodiscard]] SheetRow read_sheet_row(const std::string& name, const std::filesystem::path& original,
                                      const std::vector<RankFile>& ranks, int max_tile_side_px);

}  // namespace svdserve::cli
