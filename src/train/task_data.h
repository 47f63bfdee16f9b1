// A task's data file read and encoded for one model, whatever the family: training reads batches
// from it, evaluation turns the model's outputs into the task's metrics, computed as the field
// computes them (src/metrics/):
// named as the field names them (Hugging Face evaluate's glue / seqeval / squad metrics):
//   classification  accuracy; f1 of label 1 (MRPC, 2-label TSV); matthews_correlation (CoLA)
//   regression      pearson, spearmanr (STS-B)
//   more than one   combined_score, their mean (as run_glue.py adds it)
//   token tagging   overall_precision / overall_recall / overall_f1 (entity micro scores over
//                   words, seqeval semantics), overall_accuracy (tags), and per entity type
//                   {precision, recall, f1, number} (CoNLL)
//   span QA         exact_match / f1 of the answer mapped back to the original context (SQuAD)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "model/bert_model.h"
#include "tasks/task_definition.h"
#include "tokenizer/tokenizer.h"
#include "train/task_batch.h"

namespace bertrt {

struct TaskMetrics {
  using Values = std::vector<std::pair<std::string, double>>;
  // Metric name → value, in the order the field reports them; fractions, not percentages
  // (SQuAD's exact_match 0.808 is the paper's 80.8). NaN for an undefined correlation.
  Values values;
  // Per entity type (token tagging), sorted by type: seqeval's {precision, recall, f1, number}.
  struct Group {
    std::string name;    // "PER"
    Values values;       // precision, recall, f1
    int64_t number = 0;  // gold entities of this type (seqeval's support)
  };
  std::vector<Group> groups;
  double loss = 0;        // the head's mean loss over what it counts (examples, labelled tokens,
                          // windows)
  int64_t examples = 0;   // sentences / sentence pairs / questions scored
  int64_t features = 0;   // model inputs (NER and SQuAD windows)
};

class TaskData {
 public:
  virtual ~TaskData() = default;
  // Training rows: examples (sequence tasks) or windows (NER, SQuAD).
  virtual size_t size() const = 0;
  // Pieces in row i (its input_ids.size(); batching by length).
  virtual size_t length(size_t i) const = 0;
  // Rows order[begin .. begin+batch_size) with their targets, padded to the longest.
  virtual TaskBatch batch(const std::vector<size_t>& order, size_t begin, int batch_size) const = 0;
  // Forward passes over every row (no training) and the task's metrics.
  virtual TaskMetrics evaluate(BertModel& model, Backend& be, int batch_size) const = 0;
  // One line for the log: "67349 examples", "14041 sentences in 14045 windows", ...
  virtual std::string summary() const = 0;
};

// Reads and encodes `path` for `def` with def.max_seq_length (and def.squad for SQuAD):
// a TSV (read_glue_tsv), a CoNLL file (read_conll with def.labels) or SQuAD JSON (read_squad,
// the articles of `articles`). Errors are those of the readers, naming the file and line.
std::unique_ptr<TaskData> load_task_data(const TaskDefinition& def, const Tokenizer& tokenizer,
                                         const std::string& path, const ArticleRange& articles = {});

// Throws bertrt::Error naming `what` (e.g. "--dev FILE") when `data` is too small for def's
// metrics: a regression task's pearson and spearmanr need at least 2 examples. Callers check
// before training, so that a dev set evaluated after the first epoch cannot throw the run away.
void check_evaluable(const TaskData& data, const TaskDefinition& def, const std::string& what);

// Metrics of a sequence task from per-example outputs (K logits, or one score for regression).
std::vector<std::pair<std::string, double>> sequence_metrics(
    const std::vector<std::string>& names, const std::vector<std::vector<float>>& rows,
    const std::vector<EncodedExample>& gold, bool regression);

}  // namespace bertrt
