// The GLUE presets: one TaskSpec row per task. Column layouts are those of the shared GLUE files
// (../shared/data/README.md); label sets and metrics follow the GLUE benchmark (Wang et al. 2019,
// Table 1): CoLA Matthews correlation, MRPC F1 and accuracy, STS-B Pearson and Spearman, the
// others accuracy. Class names where the files write ids: those of Hugging Face datasets' glue
// configs (ClassLabel names), which is what predictions print.
#include <fmt/format.h>

#include "core/error.h"
#include "tasks/tsv_task.h"

namespace bertrt {
namespace {

TaskSpec classification(std::string name, bool has_header, std::vector<std::string> header,
                        int num_columns, int text_a, int text_b, int label,
                        std::vector<std::string> labels, std::vector<std::string> metrics) {
  TaskSpec t;
  t.name = std::move(name);
  t.has_header = has_header;
  t.header = std::move(header);
  t.num_columns = num_columns;
  t.text_a_column = text_a;
  t.text_b_column = text_b;
  t.label_column = label;
  t.labels = std::move(labels);
  t.metrics = std::move(metrics);
  return t;
}

std::vector<TaskSpec> make_table() {
  std::vector<TaskSpec> tasks;
  // SST-2: "sentence\tlabel", 0 = negative, 1 = positive.
  tasks.push_back(classification("sst2", true, {"sentence", "label"}, 2, 0, -1, 1, {"0", "1"},
                                 {"accuracy"}));
  tasks.back().class_names = {"negative", "positive"};
  // CoLA: no header; source, label, original mark (blank unless unacceptable), sentence.
  // 1 = acceptable.
  tasks.push_back(
      classification("cola", false, {}, 4, 3, -1, 1, {"0", "1"}, {"matthews_correlation"}));
  tasks.back().class_names = {"unacceptable", "acceptable"};
  // MRPC: "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String" (the BOM is dropped by the reader);
  // 1 = paraphrase, the positive class of F1.
  tasks.push_back(classification("mrpc", true,
                                 {"Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"}, 5, 3, 4,
                                 0, {"0", "1"}, {"accuracy", "f1"}));
  tasks.back().class_names = {"not_equivalent", "equivalent"};
  // STS-B: GLUE's 10 columns, sentence1/sentence2 at 7/8, score (0..5) last.
  TaskSpec stsb = classification("stsb", true,
                                 {"index", "genre", "filename", "year", "old_index", "source1",
                                  "source2", "sentence1", "sentence2", "score"},
                                 10, 7, 8, 9, {}, {"pearson", "spearmanr"});
  stsb.regression = true;
  stsb.target_min = 0;
  stsb.target_max = 5;
  tasks.push_back(std::move(stsb));
  // RTE: the shared file writes 0/1 (0 = entailment) where GLUE's original writes the words;
  // both are accepted.
  TaskSpec rte = classification("rte", true, {"sentence1", "sentence2", "label", "idx"}, 4, 0, 1, 2,
                                {"entailment", "not_entailment"}, {"accuracy"});
  rte.file_labels = {"0", "1"};
  tasks.push_back(std::move(rte));
  // QNLI: "index\tquestion\tsentence\tlabel" with the label words.
  tasks.push_back(classification("qnli", true, {"index", "question", "sentence", "label"}, 4, 1, 2, 3,
                                 {"entailment", "not_entailment"}, {"accuracy"}));
  return tasks;
}

const std::vector<TaskSpec>& task_table() {
  static const std::vector<TaskSpec> tasks = make_table();
  return tasks;
}

}  // namespace

const TaskSpec& glue_task(const std::string& name) {
  for (const TaskSpec& t : task_table())
    if (t.name == name) return t;
  fail("unknown task '{}' (known: {})", name, fmt::join(glue_task_names(), ", "));
}

std::vector<std::string> glue_task_names() {
  std::vector<std::string> names;
  for (const TaskSpec& t : task_table()) names.push_back(t.name);
  return names;
}

}  // namespace bertrt
