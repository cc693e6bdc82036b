#pragma once
// Local files: finding the images in a folder, reading and writing whole files.

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace svdserve {

// Extensions (lower case, no dot) of the formats the server decodes.
[[nodiscard]] std::span<const std::string_view> image_extensions() noexcept;

// The extension in lower case without the dot: "png" for "a.PNG"; empty when there is none.
[[nodiscard]] std::string lower_case_extension(const std::filesystem::path& path);

// True when the file name ends in one of image_extensions(), in any case.
[[nodiscard]] bool has_image_extension(const std::filesystem::path& path);

// The regular files with an image extension in folder (and its sub-folders when recursive),
// sorted by path. Hidden entries are kept; symlinks to files count. Throws
// std::filesystem::filesystem_error when folder cannot be read.
[[nodiscard]] std::vector<std::filesystem::path> list_image_files(const std::filesystem::path& folder,
                                                                  bool recursive = false);

// The whole file. Throws std::runtime_error naming the path and the reason.
[[nodiscard]] std::string read_file_bytes(const std::filesystem::path& path);

// Replaces the file's content. Throws std::runtime_error naming the path and the reason.
void write_file_bytes(const std::filesystem::path& path, std::string_view bytes);

}  // namespace svdserve
