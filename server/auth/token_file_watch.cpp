#include "server/auth/token_file_watch.hpp"

#include <sys/stat.h>

#include "kernels/errors.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

bool same_time(const timespec& a, const timespec& b) noexcept {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

}  // namespace

bool TokenFileWatch::Version::operator==(const Version& other) const noexcept {
  return exists == other.exists && device == other.device && inode == other.inode &&
         size == other.size && same_time(modified, other.modified) &&
         same_time(changed, other.changed);
}

TokenFileWatch::TokenFileWatch(std::string path, std::chrono::milliseconds reload_interval)
    : path_(std::move(path)), reload_interval_(reload_interval) {
  // The version before the read: a write that lands after it is another version, read later.
  version_ = version_now();
  table_ = std::make_shared<const TokenTable>(read_token_file(path_));
  next_look_ = Clock::now() + reload_interval_;
  log().info("tokens loaded path={} tokens={}", path_, table_->size());
}

std::shared_ptr<const TokenTable> TokenFileWatch::current() {
  std::lock_guard lock(mutex_);
  const Clock::time_point now = Clock::now();
  if (now >= next_look_) {
    next_look_ = now + reload_interval_;
    const Version version = version_now();
    if (!(version == version_)) reload_locked(version);
  }
  return table_;
}

TokenFileWatch::Version TokenFileWatch::version_now() const {
  struct stat status {};
  if (::stat(path_.c_str(), &status) != 0) return {};
  return {.exists = true,
          .device = status.st_dev,
          .inode = status.st_ino,
          .size = status.st_size,
          .modified = status.st_mtim,
          .changed = status.st_ctim};
}

void TokenFileWatch::reload_locked(const Version& version) {
  version_ = version;
  try {
    table_ = std::make_shared<const TokenTable>(read_token_file(path_));
    log().info("tokens reloaded path={} tokens={}", path_, table_->size());
  } catch (const Error& e) {
    // e names the line, never its text. The tokens stay as they were.
    log().warn("tokens not reloaded, the previous ones still apply: {}", e.what());
  }
}

}  // namespace svdserve
