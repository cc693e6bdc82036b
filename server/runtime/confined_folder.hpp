#pragma once
// A folder opened without following symbolic links, and the folders below it, opened one name at
// a time with openat(O_NOFOLLOW) from it: a link or a '..' on the way is refused, so nothing
// outside the folder is reached through it, however the tree changes meanwhile (LoadDirectory).

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "server/runtime/file_descriptor.hpp"

namespace svdserve {

// What lstat's or fstat's mode says a file is.
[[nodiscard]] std::filesystem::file_type file_type_of(mode_t mode) noexcept;

class ConfinedFolder {
 public:
  struct Entry {
    std::string name;
    std::filesystem::file_type type;  // of the entry itself: a link is a symlink
  };

  // The folder at an absolute path, no part of which may be a link. Throws as folder_below, the
  // messages naming the path without its leading '/'.
  [[nodiscard]] static ConfinedFolder open_absolute(std::string_view path);

  // The folder `relative` names below this one ("" for this one): '/'-separated names, none of
  // them '.', '..' or a link. Throws PermissionDenied (a link, '.' or '..', no access) or
  // NotFound (missing, not a folder); the messages name `relative` as far as it was walked.
  [[nodiscard]] ConfinedFolder folder_below(std::string_view relative) const;

  // The entries but '.' and '..', unsorted. Throws InvalidArgument when the folder cannot be read.
  [[nodiscard]] std::vector<Entry> entries() const;

  [[nodiscard]] int fd() const noexcept { return fd_.get(); }

 private:
  explicit ConfinedFolder(FileDescriptor fd) noexcept : fd_(std::move(fd)) {}
  FileDescriptor fd_;
};

}  // namespace svdserve
