#include "tasks/label_names.h"

#include <algorithm>

#include "tasks/tsv_task.h"

namespace bertrt {

bool generic_labels(const std::vector<std::string>& labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string id = std::to_string(i);
    if (labels[i] != id && labels[i] != "LABEL_" + id) return false;
  }
  return true;
}

std::vector<std::string> prediction_labels(const std::vector<std::string>& head_labels,
                                           const std::string& task) {
  if (head_labels.empty() || !generic_labels(head_labels)) return head_labels;
  const std::vector<std::string> glue = glue_task_names();
  if (std::find(glue.begin(), glue.end(), task) == glue.end()) return head_labels;
  const TaskSpec& spec = glue_task(task);
  const std::vector<std::string>& names = spec.class_names.empty() ? spec.labels : spec.class_names;
  return names.size() == head_labels.size() ? names : head_labels;
}

}  // namespace bertrt
