#include "tasks/task_definition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/utf8.h"
#include "tasks/conll.h"

namespace bertrt {

TaskFamily TaskDefinition::family() const {
  switch (kind) {
    case HeadKind::kTokenClassification: return TaskFamily::kToken;
    case HeadKind::kQuestionAnswering: return TaskFamily::kSpan;
    default: return TaskFamily::kSequence;
  }
}

HeadsConfig TaskDefinition::heads() const {
  HeadsConfig h;
  h.kind = kind;
  h.labels = labels;
  h.task = name;
  return h;
}

std::vector<std::string> task_names() {
  std::vector<std::string> names = glue_task_names();
  names.insert(names.end(), {"tsv", "conll2003", "squad"});
  return names;
}

TaskDefinition make_task_definition(const std::string& name, const GenericTsvOptions& tsv,
                                    const std::string& tsv_path) {
  TaskDefinition d;
  d.name = name;
  if (name == "conll2003") {
    d.kind = HeadKind::kTokenClassification;
    d.labels = conll2003_labels();
  } else if (name == "squad") {
    d.kind = HeadKind::kQuestionAnswering;
    d.max_seq_length = 384;  // BERT run_squad.py's default
  } else if (name == "tsv") {
    d.tsv = tsv;
    d.tsv.name = "tsv";
    const TaskSpec spec = generic_tsv_task(d.tsv, tsv_path);  // checks the columns
    d.kind = spec.regression ? HeadKind::kRegression : HeadKind::kSequenceClassification;
    d.labels = spec.labels;
    d.pair = spec.is_pair();
  } else {
    bool known = false;
    for (const std::string& n : glue_task_names()) known |= n == name;
    if (!known) fail("unknown task '{}' (known: {})", name, fmt::join(task_names(), ", "));
    const TaskSpec& spec = glue_task(name);
    d.kind = spec.regression ? HeadKind::kRegression : HeadKind::kSequenceClassification;
    d.labels = spec.labels;
    d.pair = spec.is_pair();
  }
  return d;
}

TaskSpec tsv_spec(const TaskDefinition& def, const std::string& path) {
  if (def.family() != TaskFamily::kSequence)
    fail("task {} does not read TSV files", def.name);
  return def.name == "tsv" ? generic_tsv_task(def.tsv, path) : glue_task(def.name);
}

std::string task_definition_json(const TaskDefinition& d) {
  nlohmann::json j{{"name", d.name},
                   {"head", head_kind_name(d.kind)},
                   {"labels", d.labels},
                   {"pair", d.pair},
                   {"max_seq_length", d.max_seq_length}};
  if (d.name == "tsv")
    j["tsv"] = {{"text_column", d.tsv.text_column},
                {"text_pair_column", d.tsv.text_pair_column},
                {"label_column", d.tsv.label_column},
                {"labels", d.tsv.labels},
                {"regression", d.tsv.regression},
                {"has_header", d.tsv.has_header}};
  if (d.name == "squad")
    j["squad"] = {{"doc_stride", d.squad.doc_stride},
                  {"max_query_length", d.squad.max_query_length},
                  {"n_best", d.squad_answers.n_best},
                  {"max_answer_length", d.squad_answers.max_answer_length}};
  return j.dump();
}

TaskDefinition parse_task_definition(const std::string& text, const std::string& source) {
  TaskDefinition d;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    d.name = j.at("name").get<std::string>();
    d.kind = parse_head_kind(j.at("head").get<std::string>());
    d.labels = j.at("labels").get<std::vector<std::string>>();
    d.pair = j.at("pair").get<bool>();
    d.max_seq_length = j.at("max_seq_length").get<int>();
    if (j.contains("tsv")) {
      const auto& t = j["tsv"];
      d.tsv.text_column = t.at("text_column").get<std::string>();
      d.tsv.text_pair_column = t.at("text_pair_column").get<std::string>();
      d.tsv.label_column = t.at("label_column").get<std::string>();
      d.tsv.labels = t.at("labels").get<std::vector<std::string>>();
      d.tsv.regression = t.at("regression").get<bool>();
      d.tsv.has_header = t.at("has_header").get<bool>();
      d.tsv.names = GenericTsvOptions::Names::kModelRecord;
    }
    if (j.contains("squad")) {
      const auto& s = j["squad"];
      d.squad.doc_stride = s.at("doc_stride").get<int>();
      d.squad.max_query_length = s.at("max_query_length").get<int>();
      d.squad_answers.n_best = s.at("n_best").get<int>();
      d.squad_answers.max_answer_length = s.at("max_answer_length").get<int>();
    }
  } catch (const nlohmann::json::exception& e) {
    fail("{}: metadata 'task' is not a task definition: {}", source, e.what());
  }
  d.squad.max_seq_length = d.max_seq_length;
  return d;
}

namespace {

// Labels for a message: a file may hold 100,000 of them (each checked for control characters
// before any message shows it), so the first few and the count.
std::string label_list(const std::vector<std::string>& labels) {
  constexpr size_t kShown = 8;
  if (labels.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < labels.size() && i < kShown; ++i)
    out += (i ? ", " : "") + labels[i].substr(0, 64);
  if (labels.size() > kShown) out += fmt::format(", ... ({} in all)", labels.size());
  return out;
}

}  // namespace

std::string task_record_problem(const TaskDefinition& d, const HeadsConfig& h,
                                const BertConfig& config) {
  const std::vector<std::string> names = task_names();
  if (std::find(names.begin(), names.end(), d.name) == names.end()) {
    try {  // the name is shown: a line break in it would forge lines of the error
      check_label_text(d.name, "its task name");
    } catch (const Error& e) {
      return e.what();
    }
    return fmt::format("'{}' is not a task bertrt knows", d.name.substr(0, 64));
  }
  TaskDefinition want;
  if (d.name == "tsv") {  // the generic task's options, as task_from_flags checks them
    const GenericTsvOptions& t = d.tsv;
    try {
      check_generic_tsv_options(t);
      for (const auto& [what, text] : {std::pair<const char*, const std::string&>{"text_column", t.text_column},
                                       {"text_pair_column", t.text_pair_column},
                                       {"label_column", t.label_column}})
        check_label_text(text, fmt::format("its tsv {}", what));
      for (size_t i = 0; i < t.labels.size(); ++i)
        check_label_text(t.labels[i], fmt::format("its tsv label {}", i));
    } catch (const Error& e) {
      return e.what();
    }
    if (t.text_column == t.label_column || t.text_column == t.text_pair_column ||
        t.label_column == t.text_pair_column)
      return "its tsv record names one column twice";
    want.kind = t.regression ? HeadKind::kRegression : HeadKind::kSequenceClassification;
    want.labels = t.labels;
    want.pair = !t.text_pair_column.empty();
  } else {
    want = make_task_definition(d.name);
  }
  if (d.kind != want.kind || d.labels != want.labels || d.pair != want.pair)
    return fmt::format("its head kind, labels or pair flag are not task {}'s", d.name);
  if (d.kind != h.resolved_kind() || (d.kind != HeadKind::kRegression && d.labels != h.labels))
    return fmt::format("it ({}, labels {}) does not describe the head ({}, labels {})", d.name,
                       label_list(d.labels), head_kind_name(h.resolved_kind()),
                       label_list(h.labels));
  if (d.max_seq_length < 3 || d.max_seq_length > config.max_position_embeddings)
    return fmt::format("its max_seq_length {} is outside [3, max_position_embeddings {}]",
                       d.max_seq_length, config.max_position_embeddings);
  if (d.name == "squad") {
    const auto below_one = [&](const char* field, int v) -> std::string {
      return v < 1 ? fmt::format("its squad {} {} must be ≥ 1 (as --{} is)", field, v,
                                 field == std::string("n_best") ? "n-best"
                                 : field == std::string("doc_stride") ? "doc-stride"
                                 : field == std::string("max_query_length") ? "max-query-length"
                                                                            : "max-answer-length")
                   : std::string();
    };
    for (const std::string& why :
         {below_one("doc_stride", d.squad.doc_stride),
          below_one("max_query_length", d.squad.max_query_length),
          below_one("n_best", d.squad_answers.n_best),
          below_one("max_answer_length", d.squad_answers.max_answer_length)})
      if (!why.empty()) return why;
    if (d.max_seq_length < d.squad.max_query_length + 4)
      return fmt::format("its max_seq_length {} leaves no room for context after a question of "
                         "up to max_query_length {} pieces (needs ≥ {})",
                         d.max_seq_length, d.squad.max_query_length, d.squad.max_query_length + 4);
    // A doc_stride past the window's room for context is what --doc-stride accepts too: the
    // windows then follow one another without overlap (squad_features.cpp window_starts).
  }
  return "";
}

void check_task_record(const std::map<std::string, std::string>& metadata, const HeadsConfig& heads,
                       const BertConfig& config, const std::string& path) {
  const auto it = metadata.find("task");
  if (it == metadata.end()) return;
  const TaskDefinition d = parse_task_definition(it->second, path);
  const std::string why = task_record_problem(d, heads, config);
  if (!why.empty())
    fail("{}: metadata 'task' (the task record) cannot be used: {} (a damaged or hostile file)",
         path, why);
}

ArticleRange parse_article_range(const std::string& text, const std::string& flag) {
  auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 9)
      fail("{}: expected an article range like 0-29 or 7, got '{}'", flag, text);
    for (char c : s)
      if (!std::isdigit(static_cast<unsigned char>(c)))
        fail("{}: expected an article range like 0-29 or 7, got '{}'", flag, text);
    return size_t(std::stoul(s));
  };
  const size_t dash = text.find('-');
  ArticleRange r;
  r.first = number(text.substr(0, dash));
  const size_t last = dash == std::string::npos ? r.first : number(text.substr(dash + 1));
  if (last < r.first) fail("{}: range '{}' ends before it starts", flag, text);
  r.last = last + 1;
  return r;
}

}  // namespace bertrt
