#include "client/cli/progress.hpp"

#include <array>
#include <cstdio>
#include <string>

namespace svdserve::cli {
namespace {

constexpr std::size_t kBarWidth = 30;
constexpr std::string_view kClearLine = "\r\033[K";

}  // namespace

ProgressReporter::ProgressReporter(std::ostream& err, std::size_t total, ProgressStyle style, std::string label)
    : err_(err), total_(total), style_(style), label_(std::move(label)) {
  if (style_ == ProgressStyle::bar) {
    const std::scoped_lock lock(mutex_);
    draw_bar();
  }
}

ProgressReporter::~ProgressReporter() { finish(); }

void ProgressReporter::item_done(std::string_view name, bool ok, std::string_view detail) {
  const std::scoped_lock lock(mutex_);
  if (finished_) return;
  ++done_;
  if (!ok) ++failed_;
  if (style_ == ProgressStyle::quiet) return;
  if (style_ == ProgressStyle::lines) {
    err_ << (ok ? "ok    " : "FAIL  ") << name;
    if (!detail.empty()) err_ << (ok ? "  " : ": ") << detail;
    err_ << '\n' << std::flush;
    return;
  }
  if (!ok) err_ << kClearLine << "FAIL  " << name << ": " << detail << '\n';
  draw_bar();
}

void ProgressReporter::finish() {
  const std::scoped_lock lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (style_ == ProgressStyle::bar) err_ << kClearLine << std::flush;
}

void ProgressReporter::draw_bar() {
  const std::size_t filled = total_ == 0 ? kBarWidth : done_ * kBarWidth / total_;
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string bar(filled, '#');
  bar.append(kBarWidth - filled, '.');
  std::array<char, 32> rate{};
  std::snprintf(rate.data(), rate.size(), "%.1f/s", elapsed_s > 0 ? static_cast<double>(done_) / elapsed_s : 0.0);
  err_ << kClearLine << label_ << " [" << bar << "] " << done_ << '/' << total_;
  if (failed_ > 0) err_ << ", " << failed_ << " failed";
  err_ << "  " << rate.data() << std::flush;
}

}  // namespace svdserve::cli
