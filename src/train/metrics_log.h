// Metrics as JSON lines (--metrics FILE): one object a line, flushed as written so a killed run
// keeps everything up to its last step.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace bertrt {

class MetricsLog {
 public:
  MetricsLog() = default;  // disabled: write() does nothing
  // Truncates/creates `path`; throws bertrt::Error naming the file when it cannot be opened.
  explicit MetricsLog(const std::string& path);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const nlohmann::json& record);

 private:
  std::FILE* f_ = nullptr;
};

}  // namespace bertrt
