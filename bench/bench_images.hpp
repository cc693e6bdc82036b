#pragma once
// The folder of real photos a decompose benchmark reads: --images DIR, else the environment's
// SVDSERVE_TEST_IMAGES. Nothing is compiled in, so a binary copied to another host (the portable
// bundle) reads what that host names.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

namespace svdserve::bench {

// Exit status of a benchmark given neither.
inline constexpr int kUsageExitCode = 2;

// `from_flag` is --images' value (empty when not given). Empty, after a message on stderr, when
// neither names a folder or the one named is not there.
[[nodiscard]] inline std::optional<std::string> images_folder(const char* program,
                                                              const std::string& from_flag) {
  std::string folder = from_flag;
  if (const char* from_env = std::getenv("SVDSERVE_TEST_IMAGES");
      folder.empty() && from_env != nullptr) {
    folder = from_env;
  }
  if (folder.empty()) {
    std::fprintf(stderr, "%s: no image folder: pass --images DIR or set SVDSERVE_TEST_IMAGES\n",
                 program);
    return std::nullopt;
  }
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error)) {
    std::fprintf(stderr, "%s: image folder %s is not a folder\n", program, folder.c_str());
    return std::nullopt;
  }
  return folder;
}

}  // namespace svdserve::bench
