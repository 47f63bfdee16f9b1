// Metrics as JSON lines (--metrics FILE): one object a line, flushed as written so a killed run
// keeps everything up to its last step.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace bertrt {

class MetricsLog {
 public:
  MetricsLog() = default;  // disabled: write() does nothing
  // Truncates/creates `path`; throws bertrt::Error naming the file when it cannot be opened.
  explicit MetricsLog(const std::string& path);
  // For a resumed run: keeps the existing lines of `path` whose "step" is ≤ keep_through_step
  // (the checkpoint's step; later lines came from the part of the killed run that is redone),
  // drops the rest and a torn last line, then appends. A missing file starts empty.
  MetricsLog(const std::string& path, int64_t keep_through_step);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  MetricsLog(MetricsLog&& o) noexcept : f_(o.f_) { o.f_ = nullptr; }
  void write(const nlohmann::json& record);

 private:
  std::FILE* f_ = nullptr;
};

}  // namespace bertrt
