#pragma once
// The image files LoadDirectory loads: those of a folder below a load root and, when recursive,
// of the folders below it. Nothing is followed: each folder is opened from the root name by name
// (ConfinedFolder), and an image-named entry that is not a regular file (a link, a FIFO, a device)
// or a folder that cannot be read is listed as skipped rather than failing the whole call.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/errors.hpp"
#include "server/runtime/confined_folder.hpp"

namespace svdserve {

struct ListedImage {
  std::string path;     // below the root, '/'-separated: the image's id
  std::optional<Error> skipped;  // why it is not loaded, naming no path above the root
};

// Whether the name ends in an image extension LoadDirectory reads (any case).
[[nodiscard]] bool has_image_extension(std::string_view name);

// The images of `folder` (below `root`, "" for the root itself), sorted by path. A folder that
// cannot be read is an entry of its own ("." for the root), skipped.
[[nodiscard]] std::vector<ListedImage> list_images(const ConfinedFolder& root,
                                                   const std::string& folder, bool recursive);

}  // namespace svdserve
