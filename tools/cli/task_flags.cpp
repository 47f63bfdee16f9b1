#include "task_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common.h"
#include "core/error.h"
#include "tasks/label_names.h"

namespace bertrt::cli {

std::string task_help() {
  return fmt::format(
      "task: {} (GLUE TSVs: sentence(-pair) classification, stsb regression), tsv (generic TSV: "
      "--text-column ...), conll2003 (NER, 4-column IOB2), squad (v1.1 JSON, span extraction), "
      "sentence-embedding (contrastive training of an embedding model: --loss ...), reranker "
      "(a cross-encoder for `bertrt rerank`: query, passage, label rows or SQuAD JSON, binary "
      "cross-entropy)",
      fmt::join(glue_task_names(), " "));
}

std::string preset_task_list() {
  return fmt::format("{}, conll2003 or squad", fmt::join(glue_task_names(), ", "));
}

void add_task_flags(CLI::App* c, TaskFlags& f) {
  c->add_option("--task", f.task, task_help())->required();
  const std::string g = "Generic TSV task (--task tsv)";
  f.tsv_options = {
      c->add_option("--text-column", f.text_column, "column of the text: header name or 0-based index")
          ->group(g),
      c->add_option("--text-pair-column", f.text_pair_column,
                    "column of the second text (sentence-pair task)")
          ->group(g),
      c->add_option("--label-column", f.label_column, "column of the label or score")->group(g),
      c->add_option("--labels", f.labels, "the label set as spelled in the file: a,b,c")->group(g),
      c->add_flag("--regression", f.regression, "the label column is a real number (MSE head)")
          ->group(g),
      c->add_flag("--no-header", f.no_header, "the first line is data (columns by index only)")
          ->group(g)};
  const std::string s = "SQuAD (--task squad)";
  f.squad_options = {
      c->add_option("--doc-stride", f.squad.doc_stride,
                    "pieces (WordPiece tokens) between the starts of consecutive windows of a long "
                    "context (a window: the question and as much context as fits "
                    "--max-seq-length; run_squad.py's doc_stride); keep it below the window's "
                    "context (max-seq-length - question - 3)")
          ->capture_default_str()->group(s),
      c->add_option("--max-query-length", f.squad.max_query_length,
                    "question pieces (WordPiece tokens) kept")->capture_default_str()->group(s),
      c->add_option("--n-best", f.answers.n_best, "best starts × best ends searched per window (of the context)")
          ->capture_default_str()->group(s),
      c->add_option("--max-answer-length", f.answers.max_answer_length, "longest answer, in pieces (WordPiece tokens)")
          ->capture_default_str()->group(s)};
}

TaskDefinition task_from_flags(const TaskFlags& f, const std::string& train_path,
                               int max_seq_length) {
  auto reject = [&](const std::vector<CLI::Option*>& opts, const char* owner) {
    for (const CLI::Option* o : opts)
      if (o->count())
        fail_usage("{} applies to --task {} only (this is --task {})", o->get_name(), owner,
                   f.task);
  };
  if (f.task != "tsv") reject(f.tsv_options, "tsv");
  if (f.task != "squad") reject(f.squad_options, "squad");
  GenericTsvOptions tsv;
  if (f.task == "tsv") {
    tsv.text_column = f.text_column;
    tsv.text_pair_column = f.text_pair_column;
    tsv.label_column = f.label_column;
    if (!f.labels.empty()) tsv.labels = parse_label_list(f.labels);
    tsv.regression = f.regression;
    tsv.has_header = !f.no_header;
    if (tsv.text_column.empty() || tsv.label_column.empty())
      fail_usage(
          "--task tsv needs --text-column and --label-column (and --labels a,b,c or --regression)");
  }
  TaskDefinition d = make_task_definition(f.task, tsv, train_path);
  if (max_seq_length > 0) d.max_seq_length = max_seq_length;
  if (d.name == "squad") {
    if (f.squad.doc_stride < 1) fail_usage("--doc-stride must be ≥ 1, got {}", f.squad.doc_stride);
    if (f.squad.max_query_length < 1)
      fail_usage("--max-query-length must be ≥ 1, got {}", f.squad.max_query_length);
    if (f.answers.n_best < 1) fail_usage("--n-best must be ≥ 1, got {}", f.answers.n_best);
    if (f.answers.max_answer_length < 1)
      fail_usage("--max-answer-length must be ≥ 1, got {}", f.answers.max_answer_length);
    if (d.max_seq_length < f.squad.max_query_length + 4)
      fail_usage(
          "--max-seq-length {} leaves no room for context after a question of up to "
          "--max-query-length {} pieces (needs ≥ {})",
          d.max_seq_length, f.squad.max_query_length, f.squad.max_query_length + 4);
    d.squad = f.squad;
    d.squad.max_seq_length = d.max_seq_length;
    d.squad_answers = f.answers;
  }
  return d;
}

namespace {

// A task whose data format its name alone defines: the GLUE presets, conll2003 and squad (not
// tsv, whose columns only a fine-tuned file records).
bool is_preset(const std::string& name) {
  const std::vector<std::string> names = task_names();
  return name != "tsv" && std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TaskDefinition model_task(const LoadedModel& m, const std::string& path,
                          const std::string& task_flag, bool head_is_enough) {
  const HeadsConfig& h = m.model->heads();
  if (const auto names = task_names();
      !task_flag.empty() && std::find(names.begin(), names.end(), task_flag) == names.end())
    fail_usage("--task: unknown task '{}' (known: {})", task_flag, fmt::join(names, ", "));
  if (h.resolved_kind() == HeadKind::kNone)
    fail("{}: the model has no fine-tuning head; fine-tune it first (bertrt finetune --task ...)",
         path);
  TaskDefinition d;
  const auto it = m.metadata.find("task");
  const bool recorded = it != m.metadata.end();
  if (recorded) {
    // Checked as the CLI's flags are, and against the head and the config: a record is the
    // file's word, and a file may be hostile (task_record_problem).
    check_task_record(m.metadata, h, m.model->config(), path);
    d = parse_task_definition(it->second, path);
  } else {
    // Files that do not record their task's data format: written before it was stored, or
    // converted from a checkpoint trained elsewhere. A preset named in heads.task (bertrt's
    // older files; a converted config's finetuning_task), else by --task.
    const std::string name = is_preset(h.task) || task_flag.empty() ? h.task : task_flag;
    if (!is_preset(name) && head_is_enough) return head_task(m);
    if (!is_preset(name))
      fail("{}: the model does not record its task's data format{}; name its task with --task "
           "(a GLUE task, conll2003 or squad: a converted checkpoint), or fine-tune it with this "
           "version", path, name.empty() ? "" : fmt::format(" ('{}')", name));
    d = make_task_definition(name);
    // A default, not the model's choice: at most what the model can take (run_glue.py takes
    // min(max_seq_length, the tokenizer's model_max_length) the same way).
    const int most = m.model->config().max_position_embeddings;
    if (d.max_seq_length > most) d.max_seq_length = d.squad.max_seq_length = most;
  }
  if (!task_flag.empty() && task_flag != d.name)
    fail("{}: the model was fine-tuned for task {}, not {}", path, d.name, task_flag);
  bool labels_differ = d.kind != HeadKind::kRegression && h.labels != d.labels;
  if (labels_differ && !recorded && h.resolved_kind() == d.kind &&
      std::is_permutation(h.labels.begin(), h.labels.end(), d.labels.begin(), d.labels.end())) {
    // The task's own label names in the head's order (a NER checkpoint's id2label orders its tags
    // its own way): matched by name, as run_ner.py and run_glue.py do. A token task reads its
    // gold tags through these names, so the head's order serves as the task's.
    if (d.kind != HeadKind::kTokenClassification)
      fail(
          "{}: the head's labels {} are task {}'s in another order ({}); bertrt reads a "
          "sequence head's labels in the task's order only: convert a checkpoint whose "
          "id2label lists them in that order",
          path, fmt::join(h.labels, ", "), d.name, fmt::join(d.labels, ", "));
    d.labels = h.labels;
    labels_differ = false;
  }
  // A converted head names its labels its own way (HF's id2label: LABEL_0, NEGATIVE, ...): with
  // as many labels as the task, they are the task's by index, as run_glue.py takes them. Its
  // predictions print the head's own names (prediction_labels), so no note is needed.
  const bool by_index = labels_differ && !recorded && h.labels.size() == d.labels.size();
  if (h.resolved_kind() != d.kind || (labels_differ && !by_index))
    fail("{}: the model's head ({}, {} labels) does not match task {} ({}, {} labels)", path,
         head_kind_name(h.resolved_kind()), h.labels.size(), d.name, head_kind_name(d.kind),
         d.labels.size());
  return d;
}

TaskDefinition head_task(const LoadedModel& m) {
  const HeadsConfig& h = m.model->heads();
  // The defaults of the task of the head's family: windows and answer options as squad's,
  // words split on spaces as conll2003's; the head's labels, whatever they are.
  TaskDefinition d = make_task_definition(h.resolved_kind() == HeadKind::kQuestionAnswering ? "squad"
                                          : h.resolved_kind() == HeadKind::kTokenClassification
                                              ? "conll2003"
                                              : "sst2");
  d.name.clear();
  d.kind = h.resolved_kind();
  d.labels = d.kind == HeadKind::kRegression ? std::vector<std::string>{} : h.labels;
  d.pair = false;
  const int most = m.model->config().max_position_embeddings;
  if (d.max_seq_length > most) d.max_seq_length = d.squad.max_seq_length = most;
  return d;
}

std::vector<std::string> model_labels(const LoadedModel& m, const TaskDefinition& task) {
  const HeadsConfig& h = m.model->heads();
  return prediction_labels(h.labels, task.name.empty() ? h.task : task.name);
}

}  // namespace bertrt::cli
