#include "server/runtime/image_listing.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "server/runtime/image_file.hpp"

namespace svdserve {
namespace {

namespace fs = std::filesystem;

std::string joined(const std::string& folder, const std::string& name) {
  return folder.empty() ? name : folder + "/" + name;
}

}  // namespace

bool has_image_extension(std::string_view name) {
  static const std::set<std::string, std::less<>> extensions = {
      ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".pgm", ".ppm", ".pnm", ".webp"};
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return false;  // ".png" alone is hidden, no image
  std::string extension(name.substr(dot));
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extensions.contains(extension);
}

std::vector<ListedImage> list_images(const ConfinedFolder& root, const std::string& folder,
                                     bool recursive) {
  std::vector<ListedImage> images;
  // Paths, not open folders: a wide tree holds no descriptors while it waits to be listed.
  std::vector<std::string> folders{folder};
  while (!folders.empty()) {
    const std::string current = std::move(folders.back());
    folders.pop_back();
    std::vector<ConfinedFolder::Entry> entries;
    try {
      entries = root.folder_below(current).entries();
    } catch (const Error& e) {
      images.push_back({current.empty() ? "." : current, e});
      continue;
    }
    for (const ConfinedFolder::Entry& entry : entries) {
      const std::string path = joined(current, entry.name);
      if (entry.type == fs::file_type::directory) {
        if (recursive) folders.push_back(path);
      } else if (has_image_extension(entry.name)) {
        std::optional<Error> skipped;
        if (entry.type != fs::file_type::regular) {
          skipped = InvalidArgument(not_a_regular_file("the image file", entry.type));
        }
        images.push_back({path, std::move(skipped)});
      }
    }
  }
  std::sort(images.begin(), images.end(),
            [](const ListedImage& a, const ListedImage& b) { return a.path < b.path; });
  return images;
}

}  // namespace svdserve
