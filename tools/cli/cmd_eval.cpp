// bertrt eval / predict: a fine-tuned model on its task's data (the task's metrics), or on stdin
// lines (predictions). The model records its task (`bertrt finetune`), which decides the data
// format and the metrics.
#include <fmt/format.h>

#include "common.h"
#include "core/error.h"
#include "core/json_excerpt.h"
#include "forward_input.h"
#include "io/model_io.h"
#include "task_flags.h"
#include "train/metrics_report.h"
#include "train/task_data.h"
#include "train/task_inference.h"

namespace bertrt::cli {

void add_eval(CLI::App& app) {
  struct Opts {
    std::string model, task, data, articles;
    bool json = false;
    int batch_size = 32, max_seq_length = 0;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand("eval", "a fine-tuned model's metrics on labelled task data");
  c->footer(
      "Metrics (fractions), named as Hugging Face evaluate / run_glue.py name them:\n"
      "sst2 rte qnli accuracy; mrpc accuracy + f1 (label 1); cola matthews_correlation;\n"
      "stsb pearson + spearmanr; tsv accuracy (+ f1 of the 2nd label) or pearson + spearmanr;\n"
      "combined_score = their mean where there are two; conll2003 seqeval's overall_precision,\n"
      "overall_recall, overall_f1, overall_accuracy and per type {precision, recall, f1, number};\n"
      "squad exact_match + f1 (evaluate-v1.1.py; evaluate's squad prints them x100).\n"
      "--json prints them with task, loss and examples, plus the deprecated names matthews,\n"
      "spearman and (conll2003) f1 / precision / recall for one more release.");
  c->add_option("--model", o->model, "fine-tuned model (.brt)")->required();
  c->add_option("--task", o->task,
                "check that the model was fine-tuned for this task; names the GLUE task of a "
                "model that does not record one, e.g. a converted checkpoint (optional)");
  c->add_option("--data", o->data, "labelled data: TSV, CoNLL file or SQuAD JSON")->required();
  c->add_option("--articles", o->articles,
                "SQuAD: articles of --data, e.g. 30-39 (inclusive; default all)")
      ->check(not_empty("an article range like 0-29 or 7"));
  c->add_option("--batch-size", o->batch_size, "rows per forward pass")->capture_default_str()
      ->check(at_least(1));
  c->add_option("--max-seq-length", o->max_seq_length,
                "default: the value the model was fine-tuned with")
      ->check(at_least(3));  // [CLS] A [SEP]
  c->add_flag("--json", o->json, "one JSON object: {\"task\", metrics..., \"loss\", \"examples\"}");
  o->backend.add_to(c);
  c->callback([o] {
    check_input_file("--model", o->model);
    check_input_file("--data", o->data);
    LoadedModel m = load_model(o->model);
    TaskDefinition task = model_task(m, o->model, o->task);
    if (o->max_seq_length > 0) task.max_seq_length = o->max_seq_length;
    check_max_seq_length("--max-seq-length", task.max_seq_length,
                         m.model->config().max_position_embeddings);
    if (task.name != "squad" && !o->articles.empty())
      fail_usage("--articles applies to --task squad only");
    const ArticleRange articles =
        o->articles.empty() ? ArticleRange{} : parse_article_range(o->articles, "--articles");
    const auto data = load_task_data(task, *m.tokenizer, o->data, articles);
    check_evaluable(*data, task, "--data " + o->data);
    auto be = o->backend.make_inference();
    const TaskMetrics ev = data->evaluate(*m.model, *be, o->batch_size);
    if (o->json) {
      nlohmann::json j = metrics_json(ev);
      j["task"] = task.name, j["examples"] = ev.examples, j["loss"] = ev.loss;
      if (ev.features != ev.examples) j["features"] = ev.features;
      fmt::print("{}\n", j.dump());
    } else {
      fmt::print("{} {}: {} on {} examples (loss {:.4f})\n", task.name, o->data, metrics_text(ev),
                 ev.examples, ev.loss);
    }
  });
}

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (;;) {
    const size_t tab = line.find('\t', begin);
    out.push_back(line.substr(begin, tab - begin));
    if (tab == std::string::npos) return out;
    begin = tab + 1;
  }
}

std::vector<std::string> split_whitespace(const std::string& line) {
  std::vector<std::string> out;
  std::string w;
  for (char ch : line) {
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f') {
      if (!w.empty()) out.push_back(std::move(w));
      w.clear();
    } else {
      w += ch;
    }
  }
  if (!w.empty()) out.push_back(std::move(w));
  return out;
}

// Code points before byte `b` of UTF-8 `s` (SQuAD's offsets count Python str characters).
int64_t code_points_before(const std::string& s, int64_t b) {
  int64_t n = 0;
  for (int64_t i = 0; i < b && i < int64_t(s.size()); ++i)
    n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  return n;
}

struct Predictor {
  const TaskDefinition& task;
  BertModel& model;
  const Tokenizer& tok;
  Backend& be;
  bool json;

  void sequence(const std::string& line, size_t n) const {
    const std::vector<std::string> fields = split_tabs(line);
    if (task.pair && fields.size() != 2)
      fail("stdin: line {}: task {} takes sentence pairs (two tab-separated texts); got {} field{}",
           n, task.name, fields.size(), fields.size() == 1 ? "" : "s");
    if (!task.pair && fields.size() != 1)
      fail("stdin: line {}: task {} takes single sentences; got {} tab-separated fields", n,
           task.name, fields.size());
    // Empty to the tokenizer too: only spaces, control or zero-width characters, which it drops
    // (the model would classify a bare [CLS] [SEP]).
    for (size_t i = 0; i < fields.size(); ++i)
      if (tok.tokenize(fields[i]).empty())
        fail(
            "stdin: line {}: {} is empty (no tokens: only spaces, control or zero-width "
            "characters, or bytes that are not UTF-8)",
            n, i == 0 ? "the sentence" : "the second sentence");
    TextExample ex{fields[0], std::nullopt, -1, 0};
    if (task.pair) ex.text_b = fields[1];
    const auto enc = encode_examples(tok, {ex}, task.max_seq_length);
    const SequenceOutputs out = run_sequences(model, be, enc, 1, tok.pad_id(), false);
    if (task.regression()) {
      const float score = out.rows[0][0];
      fmt::print("{}\n", json ? nlohmann::json{{"score", score}}.dump() : fmt::format("{:.4f}", score));
      return;
    }
    const std::vector<float> p = softmax(out.rows[0]);
    const std::string& label = task.labels[argmax(out.rows[0])];
    if (json) {
      nlohmann::json probs;
      for (size_t k = 0; k < task.labels.size(); ++k) probs[task.labels[k]] = p[k];
      fmt::print("{}\n", nlohmann::json{{"label", label}, {"probabilities", probs}}.dump());
    } else {
      std::string s;
      for (size_t k = 0; k < task.labels.size(); ++k) s += fmt::format("\t{}={:.4f}", task.labels[k], p[k]);
      fmt::print("{}{}\n", label, s);
    }
  }

  void tokens(const std::string& line, size_t n) const {
    NerSentence s;
    s.words = split_whitespace(line);
    std::vector<std::string> tags;
    // An empty line gives an empty line; words the tokenizer drops whole would get a made-up tag.
    if (!s.words.empty() && tok.tokenize(line).empty())
      fail("stdin: line {}: no tokens (only control or zero-width characters, or bytes that are "
           "not UTF-8)",
           n);
    if (!s.words.empty()) {
      const NerEncoding enc = encode_ner(tok, {s}, task.max_seq_length);
      const TokenOutputs out = run_tokens(model, be, enc.features, 8, tok.pad_id());
      const auto ids = ner_word_predictions(enc.features, out.logits, int(task.labels.size()),
                                            {s.words.size()});
      tags = tag_strings(ids, task.labels)[0];
    }
    if (json) {
      fmt::print("{}\n", nlohmann::json{{"words", s.words}, {"tags", tags}}.dump());
    } else {
      std::string text;
      for (size_t w = 0; w < s.words.size(); ++w)
        text += fmt::format("{}{}/{}", w ? " " : "", s.words[w], tags[w]);
      fmt::print("{}\n", text);
    }
  }

  void span(const std::string& line, size_t n) const {
    SquadExample ex;
    ex.id = fmt::format("line {}", n);
    if (!line.empty() && line[0] == '{') {
      const nlohmann::json j =
          parse_json_object_line(line, n, {"question", "context"}, {"question", "context"});
      for (const char* key : {"question", "context"})
        if (!j[key].is_string())
          fail("stdin: line {}: \"{}\" must be a string, got {}", n, key, json_excerpt(j[key]));
      ex.question = j["question"].get<std::string>();
      ex.context = j["context"].get<std::string>();
    } else {
      const std::vector<std::string> fields = split_tabs(line);
      if (fields.size() != 2)
        fail("stdin: line {}: expected a JSON object {{\"question\", \"context\"}} or question "
             "<TAB> context; got {} tab-separated field{}", n, fields.size(),
             fields.size() == 1 ? "" : "s");
      ex.question = fields[0];
      ex.context = fields[1];
    }
    for (const auto& [text, what] : {std::pair{&ex.question, "question"}, {&ex.context, "context"}})
      if (tok.tokenize(*text).empty())
        fail(
            "stdin: line {}: the {} is empty (no tokens: only spaces, control or zero-width "
            "characters)",
            n, what);
    const auto features = make_squad_features(tok, {ex}, task.squad);
    const SpanOutputs out = run_spans(model, be, features, 8, tok.pad_id(), false);
    const SquadPrediction p =
        postprocess_squad({ex}, features, out.start, out.end, task.squad_answers)[0];
    if (json) {
      nlohmann::json j{{"answer", p.text}, {"score", p.score}, {"probability", p.probability}};
      if (p.byte_begin >= 0) {
        j["start"] = code_points_before(ex.context, p.byte_begin);
        j["end"] = code_points_before(ex.context, p.byte_end);
      }
      fmt::print("{}\n", j.dump());
    } else {
      fmt::print("{}\t{:.4f}\n", p.text, p.probability);
    }
  }
};

}  // namespace

void add_predict(CLI::App& app) {
  struct Opts {
    std::string model, task;
    bool json = false;
    int max_seq_length = 0;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "predict", "predictions of a fine-tuned model for stdin lines; its task decides the format");
  c->footer(
      "Input (one example a line) → output, by the model's task:\n"
      "  single-sentence classification (sst2 cola, tsv): a sentence → label<TAB>label=prob...\n"
      "  sentence pairs (mrpc rte qnli, tsv pairs): first<TAB>second → the same\n"
      "  regression (stsb, tsv --regression): a sentence (pair) → the score\n"
      "  NER (conll2003): words separated by spaces → word/TAG for every word\n"
      "  QA (squad): {\"question\": ..., \"context\": ...} or question<TAB>context → answer<TAB>probability\n"
      "--json: {\"label\", \"probabilities\"} | {\"score\"} | {\"words\", \"tags\"} |\n"
      "  {\"answer\", \"score\" (start + end logit), \"probability\", \"start\", \"end\" (characters)}");
  c->add_option("--model", o->model, "fine-tuned model (.brt)")->required();
  c->add_option("--task", o->task,
                "the GLUE task of a model that does not record one (a converted checkpoint); "
                "else checked against the model's (optional)");
  c->add_option("--max-seq-length", o->max_seq_length,
                "default: the value the model was fine-tuned with")
      ->check(at_least(3));  // [CLS] A [SEP]
  c->add_flag("--json", o->json, "one JSON object a line");
  o->backend.add_to(c);
  c->callback([o] {
    check_input_file("--model", o->model);
    LoadedModel m = load_model(o->model);
    TaskDefinition task = model_task(m, o->model, o->task);
    if (o->max_seq_length > 0) task.max_seq_length = task.squad.max_seq_length = o->max_seq_length;
    check_max_seq_length("--max-seq-length", task.max_seq_length,
                         m.model->config().max_position_embeddings);
    auto be = o->backend.make_inference();
    const Predictor p{task, *m.model, *m.tokenizer, *be, o->json};
    for_each_stdin_line([&](const std::string& line, size_t n) {
      switch (task.family()) {
        case TaskFamily::kSequence: p.sequence(line, n); break;
        case TaskFamily::kToken: p.tokens(line, n); break;
        case TaskFamily::kSpan: p.span(line, n); break;
      }
      std::fflush(stdout);
    });
  });
}

}  // namespace bertrt::cli
