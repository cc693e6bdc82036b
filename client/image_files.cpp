#include "client/image_files.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace svdserve {
namespace {

constexpr std::array<std::string_view, 10> kImageExtensions = {
    "png", "jpg", "jpeg", "tif", "tiff", "bmp", "pgm", "ppm", "pnm", "webp"};

std::string lower_case(std::string text) {
  std::ranges::transform(text, text.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  return text;
}

std::runtime_error file_error(std::string_view action, const std::filesystem::path& path) {
  return std::runtime_error("cannot " + std::string(action) + " " + path.string() + ": " +
                            std::strerror(errno));
}

}  // namespace

std::span<const std::string_view> image_extensions() noexcept { return kImageExtensions; }

std::string lower_case_extension(const std::filesystem::path& path) {
  const std::string extension = path.extension().string();
  return extension.size() < 2 ? std::string() : lower_case(extension.substr(1));
}

bool has_image_extension(const std::filesystem::path& path) {
  const std::string extension = lower_case_extension(path);
  return !extension.empty() &&
         std::ranges::find(kImageExtensions, std::string_view(extension)) != kImageExtensions.end();
}

std::vector<std::filesystem::path> list_image_files(const std::filesystem::path& folder, bool recursive) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  const auto consider = [&](const fs::directory_entry& entry) {
    std::error_code error;
    if (entry.is_regular_file(error) && has_image_extension(entry.path())) files.push_back(entry.path());
  };
  if (recursive) {
    for (const auto& entry : fs::recursive_directory_iterator(folder)) consider(entry);
  } else {
    for (const auto& entry : fs::directory_iterator(folder)) consider(entry);
  }
  std::ranges::sort(files);
  return files;
}

std::string read_file_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw file_error("open", path);
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw std::runtime_error("cannot read " + path.string() + ": it is a folder");
  }
  std::string bytes;
  const auto size = std::filesystem::file_size(path, error);
  if (!error) bytes.reserve(size);
  bytes.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  if (file.bad()) throw file_error("read", path);
  return bytes;
}

void write_file_bytes(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw file_error("open", path);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.flush();
  if (!file) throw file_error("write", path);
}

}  // namespace svdserve
