#include "progress.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace bertrt::cli {

std::string format_duration(double s) {
  const int64_t t = s < 0 ? 0 : static_cast<int64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{:02}:{:02}", t / 60, t % 60);
}

ProgressBar::ProgressBar(std::string label, int64_t total)
    : label_(std::move(label)), total_(total > 0 ? total : 1), tty_(isatty(fileno(stderr))),
      start_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(int64_t done, const std::string& info) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double frac = double(done) / total_;
  const double eta = done > 0 ? elapsed * (total_ - done) / done : 0;
  if (tty_) {
    constexpr int kWidth = 24;
    const int filled = int(frac * kWidth);
    std::string bar(filled, '#');
    bar.resize(kWidth, '.');
    fmt::print(stderr, "\r\033[2K{} [{}] {}/{} {} | {} < {}", label_, bar, done, total_, info,
               format_duration(elapsed), format_duration(eta));
    std::fflush(stderr);
    return;
  }
  const int64_t bucket = int64_t(frac * 20);  // every 5%
  if (bucket == last_logged_ && done != total_) return;
  last_logged_ = bucket;
  fmt::print(stderr, "{} {}/{} ({:.0f}%) {} | elapsed {} eta {}\n", label_, done, total_,
             100 * frac, info, format_duration(elapsed), format_duration(eta));
}

void ProgressBar::finish(const std::string& info) {
  if (last_logged_ < 20 || tty_) update(total_, info);
  if (tty_) fmt::print(stderr, "\n");
}

void ProgressBar::stop(int64_t done, const std::string& info) {
  last_logged_ = -1;  // always print the line where the run stopped
  update(done, info);
  if (tty_) fmt::print(stderr, "\n");
}

}  // namespace bertrt::cli
