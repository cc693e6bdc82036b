#pragma once
// Paths the tests need, resolved at run time so installed test binaries (the portable bundle of
// .ci/bundle.sh) run on a machine without the source tree. Order: the environment variable of
// the same name, then the path compiled in (if it exists there), then the bundle's layout around
// the executable (bin/<test>, ../tests/data/images, ../config).

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace svdserve::test {
namespace detail {

[[nodiscard]] inline std::filesystem::path executable_dir() {
  std::error_code error;
  const auto executable = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path{} : executable.parent_path();
}

[[nodiscard]] inline std::string resolve(const char* env_name, const char* compiled,
                                         const std::filesystem::path& beside_executable) {
  if (const char* from_env = std::getenv(env_name); from_env != nullptr && *from_env != '\0') {
    return from_env;
  }
  std::error_code error;
  if (std::filesystem::exists(compiled, error)) return compiled;
  const auto dir = executable_dir();
  if (!dir.empty()) {
    // Checked before normalising, so that "../config/.." requires config/ to exist.
    auto in_bundle = dir / beside_executable;
    if (std::filesystem::exists(in_bundle, error)) {
      in_bundle = in_bundle.lexically_normal();
      if (!in_bundle.has_filename()) in_bundle = in_bundle.parent_path();  // "root/" -> "root"
      return in_bundle.string();
    }
  }
  return compiled;  // Missing everywhere: failures then name the path the build expected.
}

}  // namespace detail

// The folder of real test images (env SVDSERVE_TEST_IMAGES).
[[nodiscard]] inline const std::string& test_images_dir() {
  static const std::string path =
      detail::resolve("SVDSERVE_TEST_IMAGES", SVDSERVE_TEST_IMAGES, "../tests/data/images");
  return path;
}

// The source tree, or the bundle root: both hold config/svdserve.textproto (env SVDSERVE_SOURCE_DIR).
[[nodiscard]] inline const std::string& source_dir() {
  static const std::string path =
      detail::resolve("SVDSERVE_SOURCE_DIR", SVDSERVE_SOURCE_DIR, "../config/..");
  return path;
}

#ifdef SVDSERVE_SERVER_BINARY
// The svdserve executable (env SVDSERVE_SERVER_BINARY); in the bundle, beside the test binary.
[[nodiscard]] inline const std::string& server_binary() {
  static const std::string path =
      detail::resolve("SVDSERVE_SERVER_BINARY", SVDSERVE_SERVER_BINARY, "svdserve");
  return path;
}
#endif

#ifdef SVDSERVE_CLI_BINARY
// The svdserve-cli executable (env SVDSERVE_CLI_BINARY); in the bundle, beside the test binary.
[[nodiscard]] inline const std::string& cli_binary() {
  static const std::string path =
      detail::resolve("SVDSERVE_CLI_BINARY", SVDSERVE_CLI_BINARY, "svdserve-cli");
  return path;
}
#endif

#ifdef SVDSERVE_PROTOSET
// The protoset the build writes (env SVDSERVE_PROTOSET); in the bundle, in share/svdserve.
[[nodiscard]] inline const std::string& protoset() {
  static const std::string path = detail::resolve("SVDSERVE_PROTOSET", SVDSERVE_PROTOSET,
                                                  "../share/svdserve/svdserve.protoset");
  return path;
}
#endif

}  // namespace svdserve::test
