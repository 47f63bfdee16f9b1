#include "train/glue_tsv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "core/error.h"

namespace bertrt {

namespace {

// One row per task. Column layouts: GLUE's data files (see ../shared/data/README.md).
const std::vector<TaskSpec>& task_table() {
  static const std::vector<TaskSpec> tasks = {
      // SST-2: "sentence\tlabel", 0 = negative, 1 = positive.
      {"sst2", true, {"sentence", "label"}, 2, 0, -1, 1, {"0", "1"}},
  };
  return tasks;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

bool is_integer(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

int parse_label(const std::string& text, const TaskSpec& spec, const std::string& path,
                size_t line_no) {
  const auto it = std::find(spec.labels.begin(), spec.labels.end(), text);
  if (it != spec.labels.end()) return static_cast<int>(it - spec.labels.begin());
  const std::string column = spec.has_header ? spec.header[spec.label_column] : "label";
  const bool numeric = std::all_of(spec.labels.begin(), spec.labels.end(), is_integer);
  if (numeric && !is_integer(text))
    fail("{}: line {}: column '{}': expected an integer label, got '{}'", path, line_no, column,
         text);
  fail("{}: line {}: column '{}': label '{}' is not one of {{{}}} ({})", path, line_no, column,
       text, fmt::join(spec.labels, ", "), spec.name);
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

std::vector<TextExample> read_glue_tsv(const std::string& path, const TaskSpec& spec) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail("{}: {} file not found", path, spec.name);
  if (std::filesystem::is_directory(path, ec))
    fail("{}: is a directory, expected a TSV file", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open for reading", path);

  const size_t ncol = static_cast<size_t>(spec.num_columns);
  const std::string expected_header = fmt::format("{}", fmt::join(spec.header, "\t"));
  std::vector<TextExample> out;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
    if (line_no == 1 && spec.has_header) {
      if (line != expected_header)
        fail("{}: line 1: expected the {} header '{}', got '{}'", path, spec.name,
             fmt::join(spec.header, "<TAB>"), line);
      continue;
    }
    if (line.empty()) continue;  // no data on it (e.g. a trailing blank line)
    const std::vector<std::string> f = split_tabs(line);
    if (f.size() < ncol) {
      const size_t missing = f.size();
      const std::string name =
          spec.has_header ? spec.header[missing] : fmt::format("#{}", missing + 1);
      fail("{}: line {}: missing column '{}' (expected {} tab-separated fields, got {})", path,
           line_no, name, ncol, f.size());
    }
    if (f.size() > ncol)
      fail("{}: line {}: expected {} tab-separated fields, got {} (a stray tab in the text?)", path,
           line_no, ncol, f.size());
    TextExample ex;
    ex.text_a = f[spec.text_a_column];
    if (spec.text_b_column >= 0) ex.text_b = f[spec.text_b_column];
    ex.label = parse_label(f[spec.label_column], spec, path, line_no);
    out.push_back(std::move(ex));
  }
  if (in.bad()) fail("{}: read error after line {}", path, line_no);
  if (line_no == 0) fail("{}: empty file, expected {} examples", path, spec.name);
  if (out.empty()) fail("{}: no examples after the header", path);
  return out;
}

}  // namespace bertrt
