#pragma once
// Progress of a many-item command on stderr: a bar redrawn in place on a terminal, one line per
// item otherwise (logs, pipes). Thread-safe.

#include <chrono>
#include <cstddef>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>

namespace svdserve::cli {

enum class ProgressStyle {
  bar,    // Redrawn in place; failures are printed above it.
  lines,  // One line per item.
  quiet,  // Nothing.
};

// bar on a terminal, lines otherwise.
[[nodiscard]] constexpr ProgressStyle progress_style_for(bool is_tty) noexcept {
  return is_tty ? ProgressStyle::bar : ProgressStyle::lines;
}

class ProgressReporter {
 public:
  ProgressReporter(std::ostream& err, std::size_t total, ProgressStyle style, std::string label);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // One item finished. detail: what to show for it (the error when it failed).
  void item_done(std::string_view name, bool ok, std::string_view detail);

  // Clears the bar; further items are not shown. Called by the destructor too.
  void finish();

 private:
  void draw_bar();  // Needs mutex_.

  std::ostream& err_;
  const std::size_t total_;
  const ProgressStyle style_;
  const std::string label_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();

  std::mutex mutex_;
  std::size_t done_ = 0;     // Guarded by mutex_.
  std::size_t failed_ = 0;   // Guarded by mutex_.
  bool finished_ = false;    // Guarded by mutex_.
};

}  // namespace svdserve::cli
