#pragma once
// A fresh folder under the system temp folder for one test, removed with its contents.

#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <system_error>

namespace svdserve::testing {

class TempFolder {
 public:
  explicit TempFolder(std::string_view prefix) {
    std::random_device seed;
    do {  // create_directory is false when the name is taken: draw another.
      path_ = std::filesystem::temp_directory_path() / (std::string(prefix) + "_" + std::to_string(seed()));
    } while (!std::filesystem::create_directory(path_));
  }
  ~TempFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace svdserve::testing
