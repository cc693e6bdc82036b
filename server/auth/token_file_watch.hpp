#pragma once
// The token file, reloaded without a restart. No thread of its own: the calls themselves look at
// the file, at most once per reload interval, with one stat(); it is read again only when its
// inode, size, mtime or ctime changed. A version that cannot be read or parsed leaves the tokens
// as they were (with one warning per version), so a half-edited file never locks everyone out.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "server/auth/token_table.hpp"

namespace svdserve {

class TokenFileWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // Reads `path` now; throws InvalidArgument when it cannot be read or parsed.
  TokenFileWatch(std::string path, std::chrono::milliseconds reload_interval);

  // The tokens of the file's last good version; first looks at the file when reload_interval
  // has passed since the last look. Thread-safe.
  [[nodiscard]] std::shared_ptr<const TokenTable> current();

  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  // What stat() says of the file; a change in any field means another version.
  struct Version {
    bool exists = false;
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    timespec modified{};
    timespec changed{};
    [[nodiscard]] bool operator==(const Version& other) const noexcept;
  };
  [[nodiscard]] Version version_now() const;
  void reload_locked(const Version& version);

  const std::string path_;
  const std::chrono::milliseconds reload_interval_;
  std::mutex mutex_;
  std::shared_ptr<const TokenTable> table_;  // guarded by mutex_
  Version version_;                          // guarded by mutex_; the last version looked at
  Clock::time_point next_look_;              // guarded by mutex_
};

}  // namespace svdserve
