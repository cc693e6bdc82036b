#include "server/runtime/confined_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

namespace fs = std::filesystem;

// O_NOFOLLOW: a link fails (ELOOP). O_DIRECTORY: anything but a folder fails before it is
// opened, so a FIFO never blocks the walk.
constexpr int kFolderFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// A message quotes at most this much of a path (a client's words), cut at a UTF-8 character.
constexpr std::size_t kMaxQuotedBytes = 256;

std::string quoted(std::string_view walked) {
  std::string text(1, '\'');
  if (walked.size() <= kMaxQuotedBytes) return text.append(walked).append(1, '\'');
  std::size_t cut = kMaxQuotedBytes;
  while (cut > 0 && (static_cast<unsigned char>(walked[cut]) & 0xC0) == 0x80) --cut;
  return text.append(walked.substr(0, cut)).append("…'");
}

// Throws why `name` in `parent` did not open as a folder; `walked` is the path up to it.
[[noreturn]] void refuse(int parent, const std::string& name, std::string_view walked, int error) {
  struct stat info {};
  const bool exists = fstatat(parent, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists && S_ISLNK(info.st_mode)) {
    throw PermissionDenied(quoted(walked) + " is a symbolic link (links are not followed)");
  }
  if (error == ENOENT) throw NotFound(quoted(walked) + " does not exist");
  if (error == ENOTDIR || (exists && !S_ISDIR(info.st_mode))) {
    throw NotFound(quoted(walked) + " is not a folder");
  }
  const std::string reason = quoted(walked) + " cannot be opened: " + std::strerror(error);
  if (error == EACCES || error == EPERM) throw PermissionDenied(reason);
  throw NotFound(reason);
}

fs::file_type type_of(const dirent& entry, int folder) {
  switch (entry.d_type) {
    case DT_REG: return fs::file_type::regular;
    case DT_DIR: return fs::file_type::directory;
    case DT_LNK: return fs::file_type::symlink;
    case DT_FIFO: return fs::file_type::fifo;
    case DT_SOCK: return fs::file_type::socket;
    case DT_CHR: return fs::file_type::character;
    case DT_BLK: return fs::file_type::block;
    default: break;  // DT_UNKNOWN: the file system does not say; lstat does
  }
  struct stat info {};
  if (fstatat(folder, entry.d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) return fs::file_type::unknown;
  return file_type_of(info.st_mode);
}

struct CloseDir {
  void operator()(DIR* dir) const noexcept { closedir(dir); }
};

}  // namespace

fs::file_type file_type_of(mode_t mode) noexcept {
  if (S_ISREG(mode)) return fs::file_type::regular;
  if (S_ISDIR(mode)) return fs::file_type::directory;
  if (S_ISLNK(mode)) return fs::file_type::symlink;
  if (S_ISFIFO(mode)) return fs::file_type::fifo;
  if (S_ISSOCK(mode)) return fs::file_type::socket;
  if (S_ISCHR(mode)) return fs::file_type::character;
  if (S_ISBLK(mode)) return fs::file_type::block;
  return fs::file_type::unknown;
}

ConfinedFolder ConfinedFolder::open_absolute(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    throw InvalidArgument(quoted(path) + " is not an absolute path");
  }
  FileDescriptor top(open("/", kFolderFlags));
  if (!top.valid()) throw NotFound(std::string("'/' cannot be opened: ") + std::strerror(errno));
  return ConfinedFolder(std::move(top)).folder_below(path.substr(1));
}

ConfinedFolder ConfinedFolder::folder_below(std::string_view relative) const {
  // A NUL would end the name openat sees: what it opened would not be what was checked.
  if (relative.find('\0') != std::string_view::npos) {
    throw PermissionDenied("a path with a NUL byte in it is not allowed");
  }
  // A descriptor of its own, so that the result outlives this folder.
  FileDescriptor current(openat(fd_.get(), ".", kFolderFlags));
  if (!current.valid()) refuse(fd_.get(), ".", ".", errno);
  std::size_t start = 0;
  while (start < relative.size()) {
    std::size_t end = relative.find('/', start);
    if (end == std::string_view::npos) end = relative.size();
    const std::string name(relative.substr(start, end - start));
    const std::string_view walked = relative.substr(0, end);
    start = end + 1;
    if (name.empty()) continue;  // "a//b" is "a/b"
    if (name == "." || name == "..") {
      throw PermissionDenied(quoted(walked) + ": '.' and '..' are not allowed in a path");
    }
    FileDescriptor next(openat(current.get(), name.c_str(), kFolderFlags));
    if (!next.valid()) refuse(current.get(), name, walked, errno);
    current = std::move(next);
  }
  return ConfinedFolder(std::move(current));
}

std::vector<ConfinedFolder::Entry> ConfinedFolder::entries() const {
  const auto unreadable = [] {
    return InvalidArgument(std::string("the folder cannot be read: ") + std::strerror(errno));
  };
  // fdopendir takes the descriptor over: give it a copy, this folder keeps its own.
  FileDescriptor copy(openat(fd_.get(), ".", kFolderFlags));
  if (!copy.valid()) throw unreadable();
  std::unique_ptr<DIR, CloseDir> dir(fdopendir(copy.get()));
  if (!dir) throw unreadable();
  (void)copy.release();
  std::vector<Entry> entries;
  errno = 0;
  while (const dirent* entry = readdir(dir.get())) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") {
      entries.push_back({std::string(name), type_of(*entry, dirfd(dir.get()))});
    }
    errno = 0;
  }
  if (errno != 0) throw unreadable();
  return entries;
}

}  // namespace svdserve
