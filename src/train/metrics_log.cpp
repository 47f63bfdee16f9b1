#include "train/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "core/atomic_file.h"
#include "core/error.h"

namespace bertrt {

static std::FILE* open_or_fail(const std::string& path, const char* mode) {
  std::FILE* f = std::fopen(path.c_str(), mode);
  if (!f) fail("--metrics {}: cannot open for writing: {}", path, std::strerror(errno));
  return f;
}

MetricsLog::MetricsLog(const std::string& path) : pending_(path) {}

MetricsLog::MetricsLog(const std::string& path, int64_t keep_through_step) {
  std::string kept;
  if (std::ifstream in(path); in) {
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // no newline: torn by a kill mid-write
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) continue;
      if (j.contains("step") && j["step"].is_number() && j["step"].get<int64_t>() > keep_through_step)
        continue;
      kept += line + "\n";
    }
  }
  {  // replace atomically: a kill now leaves either the old or the filtered file
    AtomicFile out(path);
    out.write(kept.data(), kept.size());
    out.commit();
  }
  f_ = open_or_fail(path, "a");
}

MetricsLog::~MetricsLog() {
  if (f_) std::fclose(f_);
}

void MetricsLog::write(const nlohmann::json& record) {
  if (!f_ && !pending_.empty()) f_ = open_or_fail(std::exchange(pending_, {}), "w");
  if (!f_) return;
  const std::string line = record.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace bertrt
