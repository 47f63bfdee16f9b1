// The task flags of `bertrt finetune` (--task, the generic TSV columns, the SQuAD windowing) and
// the task a fine-tuned model carries, for `eval` and `predict`.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "io/model_io.h"
#include "tasks/task_definition.h"

namespace bertrt::cli {

struct TaskFlags {
  std::string task;
  std::string text_column, text_pair_column, label_column, labels;  // --task tsv
  bool regression = false, no_header = false;
  SquadFeatureOptions squad;  // --task squad (max_seq_length comes from --max-seq-length)
  SquadPostprocessOptions answers;
  std::vector<CLI::Option*> tsv_options, squad_options;  // to reject them for other tasks
};

// Adds --task and the task-specific flags to `c`.
void add_task_flags(CLI::App* c, TaskFlags& f);
// "sst2 cola ... squad" help text for --task.
std::string task_help();
// The tasks eval and predict can be told with --task (those whose data format their name alone
// defines): "sst2, cola, mrpc, stsb, rte, qnli, conll2003 or squad".
std::string preset_task_list();

// The definition of f.task: the generic TSV task is resolved against `train_path`. max_seq_length
// (0: the task's default, 384 for SQuAD as run_squad.py, else 128). Throws bertrt::Error for
// flags of another task (e.g. --doc-stride with sst2), bad values, an unknown task.
TaskDefinition task_from_flags(const TaskFlags& f, const std::string& train_path,
                               int max_seq_length);

// The task stored in a fine-tuned model (metadata "task"); files without it (older ones, converted
// checkpoints) fall back on heads.task when that is a preset (a GLUE task, conll2003, squad), else
// on `task_flag`, else (head_is_enough: predict, which needs no data format) on head_task(m).
// `task_flag` (may be empty) must name the same task.
// Checks that the model's head matches the task. Throws bertrt::Error naming `path` otherwise or
// when the model has no fine-tuning head.
TaskDefinition model_task(const LoadedModel& m, const std::string& path,
                          const std::string& task_flag, bool head_is_enough = false);

// A task of no name for a head whose task is unknown (a converted classifier): its kind and
// labels, the defaults of its family (squad's windows for a span head), a length of at most 128.
// A sequence task of no name takes single texts and pairs alike.
TaskDefinition head_task(const LoadedModel& m);

// The class names predictions print (tasks/label_names.h): the head's own, else `task`'s.
std::vector<std::string> model_labels(const LoadedModel& m, const TaskDefinition& task);

}  // namespace bertrt::cli
