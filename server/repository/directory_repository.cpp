#include "server/repository/directory_repository.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <system_error>

#include "kernels/errors.hpp"
#include "server/repository/factor_codec.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

constexpr std::string_view kEntrySuffix = ".svdf";
constexpr std::string_view kTemporaryMarker = ".tmp.";
// A temporary this old is a crashed writer's: every put finishes in far less (an fsync of a few
// MiB), and on a shared folder another server's live write is never that old.
constexpr std::chrono::hours kStaleTemporaryAge(1);

std::string errno_text(int error) { return std::generic_category().message(error); }

// Client-facing: no path, only what happened.
[[noreturn]] void throw_io_error(const char* what, int error) {
  if (error == ENOSPC || error == EDQUOT) {
    throw ResourceExhausted(std::string("the factor repository is full: ") + what +
                            " found no space left in its folder; free space or delete images");
  }
  throw Unavailable(std::string("the factor repository failed to ") + what + ": " +
                    errno_text(error));
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      throw_io_error("write an entry", errno);
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
}

// Up to `bytes` from the start of fd (fewer at its end).
std::string read_up_to(int fd, std::size_t bytes) {
  std::string out(bytes, '\0');
  std::size_t have = 0;
  while (have < bytes) {
    const ssize_t got = ::pread(fd, out.data() + have, bytes - have, static_cast<off_t>(have));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_io_error("read an entry", errno);
    }
    if (got == 0) break;
    have += static_cast<std::size_t>(got);
  }
  out.resize(have);
  return out;
}

int64_t unix_ms(const struct timespec& time) {
  return int64_t{time.tv_sec} * 1000 + time.tv_nsec / 1'000'000;
}

}  // namespace

DirectoryRepository::DirectoryRepository(std::filesystem::path folder)
    : folder_(std::move(folder)) {
  std::error_code error;
  std::filesystem::create_directories(folder_, error);
  if (error) {
    throw InvalidArgument("data_dir " + folder_.string() + " cannot be created: " +
                          error.message());
  }
  folder_fd_ = FileDescriptor(::open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!folder_fd_.valid()) {
    throw InvalidArgument("data_dir " + folder_.string() + " cannot be opened: " +
                          errno_text(errno));
  }
  if (::faccessat(folder_fd_.get(), ".", W_OK, 0) != 0) {
    throw InvalidArgument("data_dir " + folder_.string() + " is not writable by this process");
  }
  remove_stale_temporaries();
}

std::string DirectoryRepository::describe() const { return "directory " + folder_.string(); }

std::string DirectoryRepository::file_name(const std::string& id) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(id.data()), id.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name;
  name.reserve(2 * sizeof(digest) + kEntrySuffix.size());
  for (const unsigned char byte : digest) {
    name += kHex[byte >> 4];
    name += kHex[byte & 0xf];
  }
  name += kEntrySuffix;
  return name;
}

void DirectoryRepository::put(const std::string& id, std::string_view encoded) {
  static std::atomic<uint64_t> next_temporary{0};
  const std::string name = file_name(id);
  const std::string temporary = name + std::string(kTemporaryMarker) + std::to_string(::getpid()) +
                                "." + std::to_string(next_temporary.fetch_add(1));
  FileDescriptor fd(::openat(folder_fd_.get(), temporary.c_str(),
                             O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) throw_io_error("create an entry", errno);
  try {
    write_all(fd.get(), encoded);
    if (::fsync(fd.get()) != 0) throw_io_error("flush an entry to disk", errno);
    fd = FileDescriptor();
    if (::renameat(folder_fd_.get(), temporary.c_str(), folder_fd_.get(), name.c_str()) != 0) {
      throw_io_error("rename an entry into place", errno);
    }
  } catch (...) {
    fd = FileDescriptor();
    ::unlinkat(folder_fd_.get(), temporary.c_str(), 0);
    throw;
  }
  sync_folder();
}

std::optional<std::string> DirectoryRepository::get(const std::string& id) {
  const std::string name = file_name(id);
  FileDescriptor fd(::openat(folder_fd_.get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::nullopt;
    throw_io_error("open an entry", errno);
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) throw_io_error("read an entry", errno);
  if (!S_ISREG(status.st_mode)) throw CorruptEntry("factor entry is not a regular file");
  return read_up_to(fd.get(), static_cast<std::size_t>(status.st_size));
}

bool DirectoryRepository::erase(const std::string& id) {
  if (::unlinkat(folder_fd_.get(), file_name(id).c_str(), 0) != 0) {
    if (errno == ENOENT) return false;
    throw_io_error("delete an entry", errno);
  }
  sync_folder();
  return true;
}

void DirectoryRepository::scan(std::size_t head_bytes,
                               const std::function<void(const RepositoryEntryHead&)>& visit) {
  FileDescriptor listing(::openat(folder_fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* folder = listing.valid() ? ::fdopendir(listing.get()) : nullptr;
  if (folder == nullptr) throw_io_error("list its folder", errno);
  (void)listing.release();  // the DIR owns it now
  std::unique_ptr<DIR, int (*)(DIR*)> owner(folder, &::closedir);
  while (const dirent* entry = ::readdir(folder)) {
    const std::string_view name(entry->d_name);
    if (!name.ends_with(kEntrySuffix) || name.find(kTemporaryMarker) != std::string_view::npos) {
      continue;
    }
    FileDescriptor fd(
        ::openat(folder_fd_.get(), entry->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat status {};
    if (!fd.valid() || ::fstat(fd.get(), &status) != 0 || !S_ISREG(status.st_mode)) {
      log().warn("repository_skip file={} reason=\"cannot be opened as a regular file\"", name);
      continue;
    }
    std::string head;
    try {
      head = read_up_to(fd.get(), head_bytes);
    } catch (const Error& error) {
      log().warn("repository_skip file={} reason=\"{}\"", name, error.what());
      continue;
    }
    visit(RepositoryEntryHead{.head = head,
                              .total_bytes = static_cast<uint64_t>(status.st_size),
                              .written_unix_ms = unix_ms(status.st_mtim)});
  }
}

void DirectoryRepository::sync_folder() const {
  if (::fsync(folder_fd_.get()) != 0) throw_io_error("flush its folder to disk", errno);
}

void DirectoryRepository::remove_stale_temporaries() const {
  const auto now = std::chrono::system_clock::now();
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder_, error)) {
    const std::string name = entry.path().filename().string();
    if (name.find(kTemporaryMarker) == std::string::npos) continue;
    struct stat status {};
    if (::fstatat(folder_fd_.get(), name.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const auto modified = std::chrono::system_clock::time_point(
        std::chrono::seconds(status.st_mtim.tv_sec));
    if (now - modified > kStaleTemporaryAge) {
      ::unlinkat(folder_fd_.get(), name.c_str(), 0);
      log().info("repository_removed_temporary file={}", name);
    }
  }
}

}  // namespace svdserve
