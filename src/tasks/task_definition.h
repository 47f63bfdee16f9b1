// Everything a fine-tuned model must remember about its task to read the task's data again and
// to answer `predict`: the task name and family (head kind), the labels, a generic TSV task's
// columns, the SQuAD windowing and answer options, and the max_seq_length it was trained with.
// `bertrt finetune` writes it into the model file (metadata key "task", JSON), so `eval` and
// `predict` need only --model (+ the data).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "tasks/squad_features.h"
#include "tasks/tsv_task.h"

namespace bertrt {

// The four families of the BERT paper's fine-tuning (Figure 4).
enum class TaskFamily { kSequence, kToken, kSpan };

struct TaskDefinition {
  std::string name;  // sst2 cola mrpc stsb rte qnli | tsv | conll2003 | squad
  HeadKind kind = HeadKind::kNone;
  std::vector<std::string> labels;  // class names (id = index); empty for regression and spans
  bool pair = false;                // sentence-pair input (sequence family)
  GenericTsvOptions tsv;            // name == "tsv": columns as given on the command line
  SquadFeatureOptions squad;        // name == "squad": windowing
  SquadPostprocessOptions squad_answers;
  int max_seq_length = 128;

  TaskFamily family() const;
  bool regression() const { return kind == HeadKind::kRegression; }
  // The fine-tuning head for set_heads (no MLM/NSP: a fine-tuned model carries its task head).
  HeadsConfig heads() const;
};

// Every name `--task` takes, in help order.
std::vector<std::string> task_names();

// The definition of task `name`. For "tsv", `tsv` (columns, labels or regression) and the first
// line of `tsv_path` decide whether it is a pair task (generic_tsv_task checks the columns there).
// Throws bertrt::Error listing the known tasks for an unknown name.
TaskDefinition make_task_definition(const std::string& name, const GenericTsvOptions& tsv = {},
                                    const std::string& tsv_path = "");

// The TaskSpec of a sequence task (a GLUE preset, or the generic TSV task resolved against the
// first line of `path`).
TaskSpec tsv_spec(const TaskDefinition& def, const std::string& path);

// JSON text for the model's metadata and back. from_json throws bertrt::Error naming `source`
// when the text is not a definition this build understands.
std::string task_definition_json(const TaskDefinition& def);
TaskDefinition parse_task_definition(const std::string& json, const std::string& source);

// Why the task record `d` (a model's metadata "task", or an exported config.json's bertrt_task)
// cannot describe a model with these heads and config, or "" when it can: a task bertrt knows,
// consistent with itself (a preset's kind, labels and pair flag are the preset's; a generic TSV
// record's options pass the --task tsv flags' checks, its labels free of control characters),
// with the head (kind and labels) and with the config (max_seq_length in [3,
// max_position_embeddings]), and SQuAD numbers as the CLI flags take them (doc_stride,
// max_query_length, n_best, max_answer_length ≥ 1, the window leaving room for context).
std::string task_record_problem(const TaskDefinition& d, const HeadsConfig& heads,
                                const BertConfig& config);
// The model's task record, if `metadata` holds one: parsed and checked (task_record_problem).
// Throws bertrt::Error naming `path`, the record and the rule. Loaders run it at load, so a
// hostile record is refused before it answers anything.
void check_task_record(const std::map<std::string, std::string>& metadata,
                       const HeadsConfig& heads, const BertConfig& config,
                       const std::string& path);

// "0-29" (inclusive, as the issue writes article ranges) or "7" → [first, last) = [0, 30) / [7, 8).
// Throws bertrt::Error naming `flag` for anything else.
struct ArticleRange {
  size_t first = 0, last = 0;  // last == 0: every article
  bool all() const { return last == 0; }
};
ArticleRange parse_article_range(const std::string& text, const std::string& flag);

}  // namespace bertrt
