#pragma once
// The folders LoadDirectory may read (ServerConfig.load_roots). A request names a root or a
// folder below one by its absolute path; it is checked by its text first, so a path outside
// every root is refused without anything being opened, then opened from '/' one name at a time
// without following a link (ConfinedFolder). Ids are paths below the innermost root holding the
// folder. Nothing a client is told names a root.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/runtime/confined_folder.hpp"

namespace svdserve {

// Why `root` cannot be a load root, or nothing: it must be the absolute path of an existing
// folder as the file system spells it, with no link, '.' or '..' in it (realpath's answer).
[[nodiscard]] std::optional<std::string> load_root_problem(const std::string& root);

class LoadRoots {
 public:
  // Throws InvalidArgument when a root has a load_root_problem (the config is validated first).
  explicit LoadRoots(const std::vector<std::string>& roots);

  [[nodiscard]] bool empty() const noexcept { return roots_.empty(); }

  struct Folder {
    std::shared_ptr<const ConfinedFolder> root;  // opened for this request
    std::string below_root;                      // "" for the root itself
  };

  // The folder a request's path names. Throws PermissionDenied when there are no roots, or the
  // path is relative, has '.' or '..' in it, lies outside every root or meets a link on the
  // way; NotFound when it is missing or not a folder. The messages name no root.
  [[nodiscard]] Folder open(std::string_view request_path) const;

 private:
  struct Root {
    std::string path;
    std::vector<std::string> names;  // its path, split at '/'
  };
  std::vector<Root> roots_;
};

}  // namespace svdserve
