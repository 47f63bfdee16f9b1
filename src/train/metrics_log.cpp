#include "train/metrics_log.h"

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace bertrt {

MetricsLog::MetricsLog(const std::string& path) {
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) fail("--metrics {}: cannot open for writing: {}", path, std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (f_) std::fclose(f_);
}

void MetricsLog::write(const nlohmann::json& record) {
  if (!f_) return;
  const std::string line = record.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace bertrt
