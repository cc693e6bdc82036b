#pragma once
// Reading an image file from the server's own disk (LoadDirectory). The folder may change after
// it was listed: whatever stands at the path then (a FIFO, a device, a symbolic link) is refused
// without blocking on it or following it, and the size is checked before anything is read.

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace svdserve {

// The whole file. Throws InvalidArgument naming the path when it cannot be opened, is not a
// regular file (a link to one included), or is larger than max_bytes.
[[nodiscard]] std::string read_image_file(const std::string& path, std::size_t max_bytes);

// Why an entry that is not a regular file is skipped: "SUBJECT is a FIFO, not a regular file ...".
[[nodiscard]] std::string not_a_regular_file(std::string_view subject,
                                             std::filesystem::file_type type);

}  // namespace svdserve
