#include "server/runtime/load_roots.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "kernels/errors.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

namespace fs = std::filesystem;

// The names of a path, split at '/': "/a//b/" is {a, b}.
std::vector<std::string> names_of(std::string_view path) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) names.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return names;
}

std::string joined(std::vector<std::string>::const_iterator first,
                   std::vector<std::string>::const_iterator last) {
  std::string path;
  for (auto name = first; name != last; ++name) path += (path.empty() ? "" : "/") + *name;
  return path;
}

}  // namespace

std::optional<std::string> load_root_problem(const std::string& root) {
  const std::string quoted = "'" + root + "'";
  if (root.empty() || root.front() != '/') return quoted + " is not an absolute path";
  std::error_code error;
  const fs::path canonical = fs::canonical(root, error);
  if (error) return quoted + " cannot be opened: " + error.message();
  if (!fs::is_directory(canonical, error)) return quoted + " is not a folder";
  // Checked again by every request, which opens the root without following a link.
  if (names_of(canonical.string()) != names_of(root)) {
    return quoted + " has a symbolic link, '.' or '..' in it; name the folder by its own path, '" +
           canonical.string() + "'";
  }
  return std::nullopt;
}

LoadRoots::LoadRoots(const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    if (const auto problem = load_root_problem(root)) {
      throw InvalidArgument("load_roots: " + *problem);
    }
    roots_.push_back({root, names_of(root)});
  }
}

LoadRoots::Folder LoadRoots::open(std::string_view request_path) const {
  if (roots_.empty()) {
    throw PermissionDenied(
        "LoadDirectory is off: the server has no load roots configured (start it with "
        "--load-root DIR)");
  }
  if (request_path.empty()) {
    throw InvalidArgument("path is empty; name a load root or a folder below one by its absolute "
                          "path");
  }
  if (request_path.front() != '/') {
    throw PermissionDenied("the path must be absolute: a load root or a folder below one");
  }
  if (request_path.find('\0') != std::string_view::npos) {
    throw PermissionDenied("a path with a NUL byte in it is not allowed");
  }
  const std::vector<std::string> names = names_of(request_path);
  if (std::any_of(names.begin(), names.end(),
                  [](const std::string& name) { return name == "." || name == ".."; })) {
    throw PermissionDenied("'.' and '..' are not allowed in the path");
  }
  // The innermost root: --load-dir DIR's ids stay relative to DIR inside a wider root.
  const Root* holder = nullptr;
  for (const Root& root : roots_) {
    const bool holds = root.names.size() <= names.size() &&
                       std::equal(root.names.begin(), root.names.end(), names.begin());
    if (holds && (!holder || root.names.size() > holder->names.size())) holder = &root;
  }
  if (!holder) throw PermissionDenied("the path is outside every load root of this server");

  std::shared_ptr<const ConfinedFolder> root;
  try {
    root = std::make_shared<const ConfinedFolder>(ConfinedFolder::open_absolute(holder->path));
  } catch (const Error& e) {
    // Changed since the start (a link now, or gone): the admin's to fix, the client's to hear.
    log().warn("load_directory: a load root cannot be opened (debug logging names it)");
    log().debug("load_directory: load root cannot be opened root={}: {}", holder->path, e.what());
    throw PermissionDenied("the load root holding the path cannot be opened now");
  }
  Folder folder{std::move(root), joined(names.begin() + holder->names.size(), names.end())};
  (void)folder.root->folder_below(folder.below_root);  // a missing folder is this call's error
  return folder;
}

}  // namespace svdserve
