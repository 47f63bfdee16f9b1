// Sentence(-pair) classification and regression tasks read from TSV files: the GLUE presets (sst2,
// cola, mrpc, stsb, rte, qnli) and a generic TSV task whose columns are named on the command line.
// Each task is a TaskSpec (columns, labels, metrics), so adding a preset is adding a table row
// (tasks/tsv_presets.cpp).
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace bertrt {

struct TextExample {
  std::string text_a;
  std::optional<std::string> text_b;  // set for sentence-pair tasks
  int label = 0;                      // index into TaskSpec::labels; -1 for regression tasks
  float target = 0;                   // regression tasks (STS-B: similarity 0..5); 0 otherwise
};

struct TaskSpec {
  std::string name;                 // as on the command line: "sst2"
  bool has_header = true;           // first line holds the column names (checked against header)
  std::vector<std::string> header;  // expected column names; their count is the column count
  int num_columns = 0;              // every line has exactly this many tab-separated fields
  int text_a_column = 0;
  int text_b_column = -1;  // -1 for single-sentence tasks
  int label_column = 0;
  // Label names (what the model's head stores); the label id is the position in this list.
  // Empty for regression tasks.
  std::vector<std::string> labels;
  // How the file spells labels[i] when it differs from the name (the shared RTE file writes
  // 0/1 for entailment/not_entailment); empty: the names themselves. Both spellings are accepted.
  std::vector<std::string> file_labels;
  // The classes' names where `labels` are bare ids ("0", "1"): those Hugging Face datasets gives
  // the task (sst2 negative, positive); empty: `labels` are the names. What predictions print
  // (tasks/label_names.h); the files and the model's head keep `labels`.
  std::vector<std::string> class_names;
  bool regression = false;  // the label column is a real number (TextExample::target)
  double target_min = -std::numeric_limits<double>::infinity();  // regression: allowed range
  double target_max = std::numeric_limits<double>::infinity();
  // Metrics the field reports for this task, in the order and with the names of Hugging Face
  // evaluate's glue metric: "accuracy", "f1" (of the positive class, label id 1),
  // "matthews_correlation", "pearson", "spearmanr" (see metrics/).
  std::vector<std::string> metrics;

  bool is_pair() const { return text_b_column >= 0; }
};

// The spec of a preset (lower-case name: sst2 cola mrpc stsb rte qnli). Throws bertrt::Error
// listing the known tasks.
const TaskSpec& glue_task(const std::string& name);
std::vector<std::string> glue_task_names();

// A TSV task described by the user (--text-column, --text-pair-column, --label-column,
// --labels a,b,c | --regression). A column is a header name or a 0-based index (all digits).
struct GenericTsvOptions {
  std::string name = "tsv";
  std::string text_column;       // required
  std::string text_pair_column;  // empty: single-sentence task
  std::string label_column;      // required
  std::vector<std::string> labels;  // classification: the label set, as spelled in the file
  bool regression = false;          // exactly one of labels / regression
  bool has_header = true;
  // What the errors call the options: the CLI's flags ("--text-column"); a model's task record
  // for eval, predict and quantize, which take no such flag ("the model's --text-column"); or the
  // C API's fields ("options.text_column", which Python passes as text_column=).
  enum class Names { kFlags, kModelRecord, kApiOptions } names = Names::kFlags;
};

// What the errors call option `flag` ("text-column", "labels") under `names`.
std::string tsv_option_name(GenericTsvOptions::Names names, const std::string& flag);

// Resolves `options` against the first line of `path` (the header, or the first data line when
// has_header is false, which fixes the column count). Metrics: accuracy (+ f1 of label 1 for two
// labels), or pearson + spearmanr for regression. Throws bertrt::Error naming the file when a
// column name is not in the header, an index is out of range, names are used without a header,
// columns coincide, or labels/regression are both or neither given.
TaskSpec generic_tsv_task(const GenericTsvOptions& options, const std::string& path);
// The checks of the options alone (no file): text and label columns given, exactly one of labels
// and regression, no label twice. generic_tsv_task runs them first; the converter runs them on an
// exported task record.
void check_generic_tsv_options(const GenericTsvOptions& options);

// Splits "a,b,c" on commas (for --labels); empty items are an error naming `option`.
std::vector<std::string> parse_label_list(const std::string& text,
                                          const std::string& option = "--labels");

// Reads a task TSV: fields split on tabs with no quoting (GLUE processors use csv.reader with
// quotechar=None), a trailing \r and a leading UTF-8 byte-order mark are dropped, blank lines are
// skipped. Throws bertrt::Error naming the file (and line, 1-based) when it is missing, empty, has
// only a header, a wrong header, a line with a wrong number of fields (expected vs got, and the
// column names), an empty first or (pair tasks) second sentence, a label that is not one of
// spec.labels ("label 'x' is not one of {a, b}"), or a regression target that is not a number
// or outside [target_min, target_max].
std::vector<TextExample> read_glue_tsv(const std::string& path, const TaskSpec& spec);

}  // namespace bertrt
