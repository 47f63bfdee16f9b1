// Metrics as JSON lines (--metrics FILE): one object a line, flushed as written so a killed run
// keeps everything up to its last step.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace bertrt {

class MetricsLog {
 public:
  MetricsLog() = default;  // disabled: write() does nothing
  // Truncates/creates `path` at the first write, so a run that fails or is stopped before it
  // writes anything leaves an existing file as it was; that write throws bertrt::Error naming the
  // file when it cannot be opened.
  explicit MetricsLog(const std::string& path);
  // For a resumed run: keeps the existing lines of `path` whose "step" is ≤ keep_through_step
  // (the checkpoint's step; later lines came from the part of the killed run that is redone),
  // drops the rest and a torn last line, then appends. A missing file starts empty.
  MetricsLog(const std::string& path, int64_t keep_through_step);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  MetricsLog(MetricsLog&& o) noexcept : f_(o.f_), pending_(std::move(o.pending_)) {
    o.f_ = nullptr;
  }
  void write(const nlohmann::json& record);

 private:
  std::FILE* f_ = nullptr;
  std::string pending_;  // the path to truncate at the first write ("" once open, or disabled)
};

}  // namespace bertrt
