#include "tasks/task_definition.h"

#include <fmt/format.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "core/error.h"
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
