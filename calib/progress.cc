#include "calib/progress.h"

#include <unistd.h>

#include <algorithm>
#include <string>

namespace qfuse::calib {
namespace {
constexpr int kBarWidth = 30;
constexpr double kInteractiveInterval = 0.1;  // seconds between redraws
constexpr double kPlainInterval = 5.0;        // seconds between log lines
}  // namespace

ProgressBar::ProgressBar(std::string label, int64_t total, std::FILE* out)
    : ProgressBar(std::move(label), total, out, isatty(fileno(out)) != 0) {}

ProgressBar::ProgressBar(std::string label, int64_t total, std::FILE* out, bool interactive)
    : label_(std::move(label)),
      total_(std::max<int64_t>(total, 1)),
      out_(out),
      interactive_(interactive),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

void ProgressBar::Update(int64_t done) {
  done_ = done;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  if (since < (interactive_ ? kInteractiveInterval : kPlainInterval)) return;
  last_print_ = now;
  Print(done, false);
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  Print(done_, true);
}

void ProgressBar::Print(int64_t done, bool final_line) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double eta = rate > 0 ? (total_ - done) / rate : 0;
  const double fraction = std::min(1.0, static_cast<double>(done) / total_);
  if (interactive_) {
    const int filled = static_cast<int>(fraction * kBarWidth);
    std::string bar(filled, '#');
    bar.resize(kBarWidth, '.');
    std::fprintf(out_, "\r%s [%s] %lld/%lld  %.1f %s/s  ETA %.0fs   %s", label_.c_str(), bar.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_), rate, unit_.c_str(), eta,
                 final_line ? "\n" : "");
  } else if (final_line) {
    std::fprintf(out_, "%s: %lld %s in %.2fs (%.1f %s/s)\n", label_.c_str(), static_cast<long long>(done),
                 unit_.c_str(), elapsed, rate, unit_.c_str());
  } else {
    std::fprintf(out_, "%s: %lld/%lld (%.0f%%), %.1f %s/s, ETA %.0fs\n", label_.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_), 100 * fraction, rate, unit_.c_str(), eta);
  }
  std::fflush(out_);
}

}  // namespace qfuse::calib
