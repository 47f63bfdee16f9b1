// GLUE-style TSV task files → text examples. Each task is a row of a small table (TaskSpec): its
// columns, labels and whether the file has a header, so adding a task is adding a row. Only SST-2
// is defined for now.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace bertrt {

struct TextExample {
  std::string text_a;
  std::optional<std::string> text_b;  // set for sentence-pair tasks
  int label = 0;                      // index into TaskSpec::labels
};

struct TaskSpec {
  std::string name;                 // as on the command line: "sst2"
  bool has_header = true;           // first line holds the column names (checked against header)
  std::vector<std::string> header;  // expected column names; their count is the column count
  int num_columns = 0;              // every line has exactly this many tab-separated fields
  int text_a_column = 0;
  int text_b_column = -1;  // -1 for single-sentence tasks
  int label_column = 0;
  std::vector<std::string> labels;  // label text in the file → id = position in this list
};

// The spec of a known task (lower-case name). Throws bertrt::Error listing the known tasks.
const TaskSpec& glue_task(const std::string& name);
std::vector<std::string> glue_task_names();

// Reads a task TSV: fields split on tabs with no quoting (GLUE processors use csv.reader with
// quotechar=None), a trailing \r and a leading UTF-8 byte-order mark are dropped. Throws
// bertrt::Error naming the file (and line, 1-based) when it is missing, empty, has only a header,
// a wrong header, a line with too few or too many fields, or a label that is not one of
// spec.labels (a non-numeric label for a numeric label set is reported as such).
std::vector<TextExample> read_glue_tsv(const std::string& path, const TaskSpec& spec);

}  // namespace bertrt
