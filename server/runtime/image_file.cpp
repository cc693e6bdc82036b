#include "server/runtime/image_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kernels/errors.hpp"
#include "server/runtime/file_descriptor.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {

namespace fs = std::filesystem;

std::string not_a_regular_file(std::string_view subject, fs::file_type type) {
  const char* what = "not a file";
  switch (type) {
    case fs::file_type::symlink: what = "a symbolic link"; break;
    case fs::file_type::fifo: what = "a FIFO"; break;
    case fs::file_type::socket: what = "a socket"; break;
    case fs::file_type::character: what = "a character device"; break;
    case fs::file_type::block: what = "a block device"; break;
    case fs::file_type::directory: what = "a folder"; break;
    default: break;
  }
  return std::string(subject) + " is " + what + ", not a regular file (links are not followed)";
}

std::string read_image_file(const ConfinedFolder& root, std::string_view path,
                            std::size_t max_bytes) {
  // The caller's result names the entry: the messages need not.
  const auto refuse = [&](const std::string& message) {
    log().debug("image file refused path={}: {}", path, message);
    return InvalidArgument(message);
  };
  const auto cannot_read = [&] {
    return refuse(std::string("cannot read the image file: ") + std::strerror(errno));
  };
  const auto irregular = [&](fs::file_type type) {
    return refuse(not_a_regular_file("the image file", type));
  };
  const std::size_t slash = path.rfind('/');
  const ConfinedFolder folder =
      root.folder_below(slash == std::string_view::npos ? "" : path.substr(0, slash));
  const std::string name(slash == std::string_view::npos ? path : path.substr(slash + 1));
  if (name.empty() || name == "." || name == ".." || name.find('\0') != std::string::npos) {
    throw refuse("the image file's name is not a file name");
  }
  // O_NONBLOCK: opening a FIFO does not wait for a writer. O_NOFOLLOW: a link fails with ELOOP.
  FileDescriptor file(
      openat(folder.fd(), name.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  if (file.get() < 0) {
    if (errno == ELOOP) throw irregular(fs::file_type::symlink);
    throw cannot_read();
  }
  struct stat info {};
  if (fstat(file.get(), &info) != 0) throw cannot_read();
  if (!S_ISREG(info.st_mode)) throw irregular(file_type_of(info.st_mode));
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size > max_bytes) {
    throw refuse("the image file is " + std::to_string(size) +
                 " bytes, over the server's max_image_bytes of " + std::to_string(max_bytes));
  }
  std::string bytes(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = read(file.get(), bytes.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw cannot_read();
    if (n == 0) break;  // the file shrank since fstat
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace svdserve
