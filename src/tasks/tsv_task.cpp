// The TSV reader shared by every sentence(-pair) task, and the generic TSV task.
#include "tasks/tsv_task.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>
#include <unordered_set>

#include "core/error.h"
#include "core/utf8.h"
#include "tasks/tsv_fields.h"

namespace bertrt {

namespace {

// The start of a line for an error message, bytes outside printable ASCII as \xNN: a wrong file
// (a JSON document on one line, a binary model) must not print megabytes or stop at a NUL byte.
std::string line_excerpt(const std::string& line) {
  constexpr size_t kMax = 80;
  const size_t end = std::min(line.size(), kMax);
  std::string out;
  for (size_t i = 0; i < end; ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    out += c >= 0x20 && c < 0x7f ? std::string(1, char(c)) : fmt::format("\\x{:02x}", c);
  }
  if (end < line.size()) out += fmt::format("... ({} bytes)", line.size());
  return out;
}

bool is_integer(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

std::string column_name(const TaskSpec& spec, int column) {
  if (spec.has_header && column < int(spec.header.size())) return spec.header[column];
  return fmt::format("#{}", column);  // 0-based, as --label-column takes it
}

// The label spellings accepted for label id k: its name and, if given, the file's spelling.
std::vector<std::string> accepted_labels(const TaskSpec& spec) {
  std::vector<std::string> all = spec.file_labels;
  all.insert(all.end(), spec.labels.begin(), spec.labels.end());
  return all;
}

int parse_label(const std::string& text, const TaskSpec& spec, const std::string& path,
                size_t line_no) {
  for (size_t k = 0; k < spec.labels.size(); ++k)
    if (text == spec.labels[k] || (k < spec.file_labels.size() && text == spec.file_labels[k]))
      return static_cast<int>(k);
  const std::string column = column_name(spec, spec.label_column);
  const std::vector<std::string> accepted = accepted_labels(spec);
  const bool numeric = std::all_of(accepted.begin(), accepted.end(), is_integer);
  if (numeric && !is_integer(text))
    fail("{}: line {}: column '{}': expected an integer label, got '{}'", path, line_no, column,
         text);
  fail("{}: line {}: column '{}': label '{}' is not one of {{{}}} ({})", path, line_no, column,
       text, fmt::join(accepted, ", "), spec.name);
}

float parse_target(const std::string& text, const TaskSpec& spec, const std::string& path,
                   size_t line_no) {
  const std::string column = column_name(spec, spec.label_column);
  // from_chars: decimal only (strtod also reads hex such as 0x3) and never the C locale's comma.
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() ||
      !std::isfinite(v))
    fail("{}: line {}: column '{}': expected a number (regression target), got '{}'", path,
         line_no, column, text);
  if (v < spec.target_min || v > spec.target_max)
    fail("{}: line {}: column '{}': target {} is outside [{}, {}] ({})", path, line_no, column,
         text, spec.target_min, spec.target_max, spec.name);
  return static_cast<float>(v);
}

std::string expected_columns(const TaskSpec& spec) {
  std::vector<std::string> names;
  for (int c = 0; c < spec.num_columns; ++c) names.push_back(column_name(spec, c));
  return fmt::format("{}", fmt::join(names, ", "));
}

TextExample parse_line(const std::string& line, const TaskSpec& spec, const std::string& path,
                       size_t line_no) {
  const std::vector<std::string> f = split_tabs(line);
  const size_t ncol = static_cast<size_t>(spec.num_columns);
  if (f.size() < ncol) {
    const size_t missing = f.size();
    fail("{}: line {}: missing column '{}' (expected {} tab-separated fields: {}; got {}){}", path,
         line_no, column_name(spec, int(missing)), ncol, expected_columns(spec), f.size(),
         spec.is_pair() ? fmt::format("; task {} takes sentence pairs", spec.name) : "");
  }
  if (f.size() > ncol)
    fail("{}: line {}: expected {} tab-separated fields, got {} (a stray tab in the text?)", path,
         line_no, ncol, f.size());
  TextExample ex;
  ex.text_a = f[spec.text_a_column];
  if (ex.text_a.empty())
    fail("{}: line {}: column '{}' (the text) is empty", path, line_no,
         column_name(spec, spec.text_a_column));
  if (spec.is_pair()) {
    ex.text_b = f[spec.text_b_column];
    if (ex.text_b->empty())
      fail("{}: line {}: column '{}' (the second sentence) is empty: task {} takes sentence pairs",
           path, line_no, column_name(spec, spec.text_b_column), spec.name);
  }
  if (spec.regression) {
    ex.label = -1;
    ex.target = parse_target(f[spec.label_column], spec, path, line_no);
  } else {
    ex.label = parse_label(f[spec.label_column], spec, path, line_no);
  }
  return ex;
}

void check_readable(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail("{}: {} file not found", path, what);
  if (std::filesystem::is_directory(path, ec))
    fail("{}: is a directory, expected a TSV file", path);
}

// The first line of a file without its BOM and \r (empty when the file is empty).
std::string first_line(const std::string& path) {
  check_readable(path, "TSV");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open for reading", path);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const size_t bom = drop_utf8_bom(line);
  check_utf8_line(line, path, 1, bom);  // before its names are matched against the columns
  return line;
}

int resolve_column(const std::string& ref, const std::string& option,
                   const std::vector<std::string>& header, bool has_header, int num_columns,
                   const std::string& path) {
  if (all_digits(ref)) {
    const long idx = std::strtol(ref.c_str(), nullptr, 10);
    if (idx >= num_columns)
      fail("{}: {} {} is out of range: the file has {} columns (0-based indices)", path, option,
           ref, num_columns);
    return static_cast<int>(idx);
  }
  if (!has_header)
    fail("{}: {} '{}' is a name but the file has no header: give a 0-based column index", path,
         option, ref);
  const auto it = std::find(header.begin(), header.end(), ref);
  if (it == header.end())
    fail("{}: {} '{}' is not a column of the header (columns: {})", path, option, ref,
         fmt::join(header, ", "));
  return static_cast<int>(it - header.begin());
}

}  // namespace

std::string tsv_option_name(GenericTsvOptions::Names names, const std::string& flag) {
  switch (names) {
    case GenericTsvOptions::Names::kFlags:
      return "--" + flag;
    case GenericTsvOptions::Names::kModelRecord:
      return "the model's --" + flag;
    case GenericTsvOptions::Names::kApiOptions: {
      std::string field = flag;
      std::replace(field.begin(), field.end(), '-', '_');
      return "options." + field;
    }
  }
  return flag;
}

std::vector<std::string> parse_label_list(const std::string& text, const std::string& option) {
  std::vector<std::string> labels;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    labels.push_back(text.substr(start, comma - start));
    if (labels.back().empty()) fail("{} '{}': empty label (expected a,b,c)", option, text);
    if (comma == std::string::npos) return labels;
    start = comma + 1;
  }
}

void check_generic_tsv_options(const GenericTsvOptions& o) {
  auto name = [&](const char* flag) { return tsv_option_name(o.names, flag); };
  if (o.text_column.empty()) fail("generic TSV task: the text column is required");
  if (o.label_column.empty()) fail("generic TSV task: the label column is required");
  if (o.regression == !o.labels.empty())
    fail("generic TSV task: give exactly one of {} a,b,c and {}", name("labels"),
         name("regression"));
  std::unordered_set<std::string_view> seen;  // hashed: a model's record may list many labels
  for (const std::string& l : o.labels)
    if (!seen.insert(l).second) fail("{}: '{}' appears twice", name("labels"), l);
}

TaskSpec generic_tsv_task(const GenericTsvOptions& o, const std::string& path) {
  check_generic_tsv_options(o);

  const std::string line = first_line(path);
  if (line.empty()) fail("{}: empty first line, expected {}", path, o.has_header ? "a header" : "data");
  const std::vector<std::string> fields = split_tabs(line);
  TaskSpec t;
  t.name = o.name;
  t.has_header = o.has_header;
  if (o.has_header) t.header = fields;
  t.num_columns = static_cast<int>(fields.size());
  auto name = [&](const char* flag) { return tsv_option_name(o.names, flag); };
  t.text_a_column =
      resolve_column(o.text_column, name("text-column"), fields, o.has_header, t.num_columns, path);
  if (!o.text_pair_column.empty())
    t.text_b_column = resolve_column(o.text_pair_column, name("text-pair-column"), fields,
                                     o.has_header, t.num_columns, path);
  t.label_column = resolve_column(o.label_column, name("label-column"), fields, o.has_header,
                                  t.num_columns, path);
  if (t.label_column == t.text_a_column || t.label_column == t.text_b_column ||
      t.text_a_column == t.text_b_column)
    fail("{}: the text, text-pair and label columns must differ (got {}, {}, {})", path,
         t.text_a_column, t.text_b_column, t.label_column);
  t.regression = o.regression;
  t.labels = o.labels;
  if (o.regression)
    t.metrics = {"pearson", "spearmanr"};
  else if (o.labels.size() == 2)
    t.metrics = {"accuracy", "f1"};
  else
    t.metrics = {"accuracy"};
  return t;
}

std::vector<TextExample> read_glue_tsv(const std::string& path, const TaskSpec& spec) {
  check_readable(path, spec.name);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open for reading", path);

  const std::string expected_header = fmt::format("{}", fmt::join(spec.header, "\t"));
  std::vector<TextExample> out;
  std::string line;
  size_t line_no = 0, bom = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1) bom = drop_utf8_bom(line);
    const size_t skipped = line_no == 1 ? bom : 0;
    if (line_no == 1 && utf16_bom(line)) check_utf8_line(line, path, line_no);
    if (line_no == 1 && spec.has_header) {
      if (line != expected_header)
        fail("{}: line 1: expected the {} header '{}', got '{}'", path, spec.name,
             fmt::join(spec.header, "<TAB>"), line_excerpt(line));
      check_utf8_line(line, path, line_no, skipped);  // a generic TSV's header is its own
      continue;
    }
    if (line.empty()) continue;  // no data on it (e.g. a trailing blank line)
    // (After the header's check: a binary file fails that.)
    check_utf8_line(line, path, line_no, skipped);
    out.push_back(parse_line(line, spec, path, line_no));
  }
  if (in.bad()) fail("{}: read error after line {}", path, line_no);
  if (line_no == 0) fail("{}: empty file, expected {} examples", path, spec.name);
  if (out.empty()) fail("{}: no examples after the header", path);
  return out;
}

}  // namespace bertrt
