#pragma once
// Reading an image file from the server's own disk (LoadDirectory), below a load root. The
// folder may change after it was listed: whatever stands at the path then (a FIFO, a device, a
// symbolic link, a link in place of a folder on the way) is refused without blocking on it or
// following it, and the size is checked before anything is read.

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "server/runtime/confined_folder.hpp"

namespace svdserve {

// The whole file at `path` below `root` ('/'-separated, as ConfinedFolder::folder_below takes
// it). Throws InvalidArgument when it cannot be opened, is not a regular file (a link to one
// included) or is larger than max_bytes; as folder_below when its folder cannot be reached.
// Messages name no path but `path`'s folders.
[[nodiscard]] std::string read_image_file(const ConfinedFolder& root, std::string_view path,
                                          std::size_t max_bytes);

// Why an entry that is not a regular file is skipped: "SUBJECT is a FIFO, not a regular file ...".
[[nodiscard]] std::string not_a_regular_file(std::string_view subject,
                                             std::filesystem::file_type type);

}  // namespace svdserve
