#include "train/metrics_report.h"

#include <fmt/format.h>

namespace bertrt {

const std::vector<std::pair<std::string, std::string>>& deprecated_metric_aliases() {
  static const std::vector<std::pair<std::string, std::string>> kAliases = {
      {"matthews_correlation", "matthews"},
      {"spearmanr", "spearman"},
      {"overall_f1", "f1"},
      {"overall_precision", "precision"},
      {"overall_recall", "recall"}};
  return kAliases;
}

nlohmann::json metrics_json(const TaskMetrics& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, v] : m.values) j[name] = v;
  for (const TaskMetrics::Group& g : m.groups) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [name, v] : g.values) o[name] = v;
    o["number"] = g.number;
    j[g.name] = o;
  }
  for (const auto& [name, alias] : deprecated_metric_aliases())
    if (j.contains(name) && !j.contains(alias)) j[alias] = j[name];
  return j;
}

std::string metrics_text(const TaskMetrics& m) {
  std::string s;
  for (const auto& [name, v] : m.values)
    s += fmt::format("{}{} {:.4f}", s.empty() ? "" : ", ", name, v);
  for (size_t i = 0; i < m.groups.size(); ++i) {
    const TaskMetrics::Group& g = m.groups[i];
    double f1 = 0;
    for (const auto& [name, v] : g.values)
      if (name == "f1") f1 = v;
    s += fmt::format("{}{} f1 {:.4f} ({})", i == 0 ? "; " : ", ", g.name, f1, g.number);
  }
  return s;
}

}  // namespace bertrt
