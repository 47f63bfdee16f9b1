// A one-line progress bar on stderr for long runs (step, loss, tokens/s, ETA). On a terminal it
// redraws in place; otherwise (logs, CI) it prints a plain line every ~5% so logs stay short.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace bertrt::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total);
  // done in [0, total]; `info` is appended (e.g. "loss 2.31 · 5120 tok/s").
  void update(int64_t done, const std::string& info = "");
  void finish(const std::string& info = "");
  // The last line of a run stopped early (e.g. by SIGTERM): at `done`, not at 100 %.
  void stop(int64_t done, const std::string& info);

 private:
  std::string label_;
  int64_t total_;
  bool tty_;
  int64_t last_logged_ = -1;
  std::chrono::steady_clock::time_point start_;
};

std::string format_duration(double seconds);  // "1:02:03" / "02:03"

}  // namespace bertrt::cli
