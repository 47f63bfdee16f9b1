#include "tasks/conll.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "core/error.h"
#include "core/utf8.h"

namespace bertrt {
namespace {

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> f;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    f.push_back(line.substr(i, j - i));
    i = j;
  }
  return f;
}

bool is_blank(const std::string& line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t'; });
}

// IOB1 → IOB2: an I-X that does not continue an X entity starts one, so it becomes B-X.
void to_iob2(NerSentence& s, const std::vector<std::string>& labels, size_t& fixes) {
  std::string prev = "O";
  for (int& id : s.tags) {
    const std::string& tag = labels[id];
    if (tag.rfind("I-", 0) == 0 && (prev == "O" || prev.substr(2) != tag.substr(2))) {
      const auto b = std::find(labels.begin(), labels.end(), "B-" + tag.substr(2));
      if (b != labels.end()) {
        id = int(b - labels.begin());
        ++fixes;
      }
    }
    prev = labels[id];
  }
}

}  // namespace

const std::vector<std::string>& conll2003_labels() {
  static const std::vector<std::string> labels = {"O",     "B-PER", "I-PER",  "B-ORG", "I-ORG",
                                                  "B-LOC", "I-LOC", "B-MISC", "I-MISC"};
  return labels;
}

std::vector<NerSentence> read_conll(const std::string& path, const std::vector<std::string>& labels,
                                    ConllStats* stats, int columns, int tag_column) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail("{}: CoNLL file not found", path);
  if (std::filesystem::is_directory(path, ec)) fail("{}: is a directory, expected a CoNLL file", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open for reading", path);

  ConllStats st;
  std::vector<NerSentence> out;
  NerSentence cur;
  auto finish = [&] {
    if (cur.words.empty()) return;
    to_iob2(cur, labels, st.iob1_fixes);
    st.words += cur.words.size();
    out.push_back(std::move(cur));
    cur = NerSentence();
  };
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t bom = line_no == 1 ? drop_utf8_bom(line) : 0;
    check_utf8_line(line, path, line_no, bom);
    if (is_blank(line)) {
      finish();
      continue;
    }
    const std::vector<std::string> f = split_fields(line);
    if (f[0] == "-DOCSTART-") {  // document boundary: also ends a sentence
      finish();
      ++st.docstarts;
      continue;
    }
    if (int(f.size()) != columns)
      fail("{}: line {}: expected {} space-separated columns (word POS chunk NER), got {}", path,
           line_no, columns, f.size());
    const std::string& tag = f[tag_column];
    const auto it = std::find(labels.begin(), labels.end(), tag);
    if (it == labels.end())
      fail("{}: line {}: tag '{}' is not one of {{{}}}", path, line_no, tag, fmt::join(labels, ", "));
    if (cur.words.empty()) cur.line = line_no;
    cur.words.push_back(f[0]);
    cur.tags.push_back(int(it - labels.begin()));
  }
  if (in.bad()) fail("{}: read error after line {}", path, line_no);
  finish();
  if (line_no == 0) fail("{}: empty file, expected CoNLL sentences", path);
  if (out.empty()) fail("{}: no sentences", path);
  st.sentences = out.size();
  if (stats) *stats = st;
  return out;
}

}  // namespace bertrt
