// bertrt predict: a fine-tuned model's predictions for the lines of a file or stdin. The model's
// task (recorded by `bertrt finetune`, else its head's kind) decides the input and output format;
// the class names are the model's own or its task's (tasks/label_names.h).
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include "common.h"
#include "lora_flags.h"
#include "core/error.h"
#include "core/json_excerpt.h"
#include "core/utf8.h"
#include "forward_input.h"
#include "io/model_io.h"
#include "task_flags.h"
#include "tasks/tsv_fields.h"
#include "train/task_data.h"
#include "train/task_inference.h"

namespace bertrt::cli {

namespace {

using ojson = nlohmann::ordered_json;  // keys in the order written: line, input, prediction

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

bool blank(const std::string& line) {
  return line.find_first_not_of(" \t\r\v\f") == std::string::npos;
}

// Code points before byte `b` of UTF-8 `s` (SQuAD's offsets count Python str characters).
int64_t code_points_before(const std::string& s, int64_t b) {
  int64_t n = 0;
  for (int64_t i = 0; i < b && i < int64_t(s.size()); ++i)
    n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  return n;
}

// --text-column / --text-pair-column of a TSV input: a header name or a 0-based index, as
// `bertrt finetune --task tsv` takes them.
struct Columns {
  std::string text_flag, pair_flag;  // as given ("" when not)
  bool header = true;
  int text = -1, pair = -1;  // resolved indices (-1: none)

  bool given() const { return !text_flag.empty(); }

  static bool digits(const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  }

  // Resolves the flags against the first line (the header, or the first data line).
  void resolve(const std::string& first_line, const std::string& source) {
    const std::vector<std::string> names = split_tabs(first_line);
    auto one = [&](const std::string& flag, const std::string& value) -> int {
      if (digits(value)) {
        const unsigned long long i = std::strtoull(value.c_str(), nullptr, 10);  // ≤ ULLONG_MAX
        if (i >= names.size())
          fail("{} {}: {} line 1 has {} tab-separated column{} (indices 0 to {})", flag, value,
               source, names.size(), names.size() == 1 ? "" : "s", names.size() - 1);
        return int(i);
      }
      if (!header)
        fail_usage("{} {}: a column name needs a header line; with --no-header give its 0-based "
                   "index", flag, value);
      for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == value) return int(i);
      fail("{} {}: no such column in the header of {} (line 1: {})", flag, value, source,
           fmt::join(names, ", "));
    };
    text = one("--text-column", text_flag);
    if (!pair_flag.empty()) {
      pair = one("--text-pair-column", pair_flag);
      if (pair == text)
        fail_usage("--text-column {} and --text-pair-column {} are the same column", text_flag,
                   pair_flag);
    }
  }

  // The texts of one data line: {text} or {text, text_pair}.
  std::vector<std::string> pick(const std::string& line, size_t n, const std::string& source) const {
    const std::vector<std::string> f = split_tabs(line);
    const int need = std::max(text, pair) + 1;
    if (int(f.size()) < need)
      fail("{}: line {}: {} tab-separated field{}, the columns read need {}", source, n, f.size(),
           f.size() == 1 ? "" : "s", need);
    std::vector<std::string> out{f[size_t(text)]};
    if (pair >= 0) out.push_back(f[size_t(pair)]);
    return out;
  }
};

struct Predictor {
  const TaskDefinition& task;
  const std::vector<std::string>& labels;  // the class names printed (model_labels)
  BertModel& model;
  const Tokenizer& tok;
  Backend& be;
  bool json;
  const std::string& source;  // "stdin" or the --input path, for messages
  const Columns& columns;

  // "task mrpc", or "the model" for a head of no known task (single texts and pairs alike).
  std::string who() const { return task.name.empty() ? "the model" : "task " + task.name; }

  void sequence(const std::string& line, size_t n) const {
    const std::vector<std::string> fields = columns.given() ? columns.pick(line, n, source)
                                                            : split_tabs(line);
    const bool any = task.name.empty();  // a head of no known task: a text or a pair
    if (!any && !task.pair && fields.size() != 1)
      fail("{}: line {}: {} takes single sentences; got {} tab-separated fields{}", source, n,
           who(), fields.size(),
           columns.given() ? "" : " (--text-column picks the column of a TSV file)");
    if ((!any && task.pair && fields.size() != 2) || fields.size() > 2)
      fail("{}: line {}: {} takes {}sentence pairs (two tab-separated texts); got {} field{}{}",
           source, n, who(), any ? "single sentences or " : "", fields.size(),
           fields.size() == 1 ? "" : "s",
           columns.given() ? "" : " (--text-column and --text-pair-column pick the columns of a "
                                  "TSV file)");
    // Empty to the tokenizer too: only spaces, control or zero-width characters, which it drops
    // (the model would classify a bare [CLS] [SEP]).
    for (size_t i = 0; i < fields.size(); ++i)
      if (tok.tokenize(fields[i]).empty())
        fail(
            "{}: line {}: {} is empty (no tokens: only spaces, control or zero-width "
            "characters, or bytes that are not UTF-8)",
            source, n, i == 0 ? "the sentence" : "the second sentence");
    TextExample ex{fields[0], std::nullopt, -1, 0};
    if (fields.size() == 2) ex.text_b = fields[1];
    const auto enc = encode_examples(tok, {ex}, task.max_seq_length);
    const SequenceOutputs out = run_sequences(model, be, enc, 1, tok.pad_id(), false);
    ojson j{{"line", n}, {"text", fields[0]}};
    if (ex.text_b) j["text_pair"] = *ex.text_b;
    if (task.regression()) {
      const float score = out.rows[0][0];
      j["score"] = score;
      fmt::print("{}\n", json ? j.dump() : fmt::format("{:.4f}", score));
      return;
    }
    const std::vector<float> p = softmax(out.rows[0]);
    const std::string& label = labels[argmax(out.rows[0])];
    if (json) {
      ojson probs = ojson::object();
      for (size_t k = 0; k < labels.size(); ++k) probs[labels[k]] = p[k];
      j["label"] = label, j["probabilities"] = probs;
      fmt::print("{}\n", j.dump());
    } else {
      std::string s;
      for (size_t k = 0; k < labels.size(); ++k) s += fmt::format("\t{}={:.4f}", labels[k], p[k]);
      fmt::print("{}{}\n", label, s);
    }
  }

  void tokens(const std::string& line, size_t n) const {
    const std::string text = columns.given() ? columns.pick(line, n, source)[0] : line;
    NerSentence s;
    s.words = split_whitespace(text);
    // Words the tokenizer drops whole would get a made-up tag.
    if (s.words.empty() || tok.tokenize(text).empty())
      fail("{}: line {}: no tokens (only spaces, control or zero-width characters, or bytes that "
           "are not UTF-8)",
           source, n);
    const NerEncoding enc = encode_ner(tok, {s}, task.max_seq_length);
    const TokenOutputs out = run_tokens(model, be, enc.features, 8, tok.pad_id());
    const auto ids = ner_word_predictions(enc.features, out.logits, int(labels.size()),
                                          {s.words.size()});
    const std::vector<std::string> tags = tag_strings(ids, labels)[0];
    if (json) {
      fmt::print("{}\n", ojson{{"line", n}, {"words", s.words}, {"tags", tags}}.dump());
    } else {
      std::string out_text;
      for (size_t w = 0; w < s.words.size(); ++w)
        out_text += fmt::format("{}{}/{}", w ? " " : "", s.words[w], tags[w]);
      fmt::print("{}\n", out_text);
    }
  }

  void span(const std::string& line, size_t n) const {
    SquadExample ex;
    ex.id = fmt::format("line {}", n);
    if (columns.given()) {
      const std::vector<std::string> f = columns.pick(line, n, source);
      ex.question = f[0], ex.context = f[1];
    } else if (!line.empty() && line[0] == '{') {
      const nlohmann::json j = parse_json_object_line(line, n, {"question", "context"},
                                                      {"question", "context"}, source);
      for (const char* key : {"question", "context"})
        if (!j[key].is_string())
          fail("{}: line {}: \"{}\" must be a string, got {}", source, n, key,
               json_excerpt(j[key]));
      ex.question = j["question"].get<std::string>();
      ex.context = j["context"].get<std::string>();
    } else {
      const std::vector<std::string> fields = split_tabs(line);
      if (fields.size() != 2)
        fail("{}: line {}: expected a JSON object {{\"question\", \"context\"}} or question "
             "<TAB> context; got {} tab-separated field{}", source, n, fields.size(),
             fields.size() == 1 ? "" : "s");
      ex.question = fields[0];
      ex.context = fields[1];
    }
    for (const auto& [text, what] : {std::pair{&ex.question, "question"}, {&ex.context, "context"}})
      if (tok.tokenize(*text).empty())
        fail(
            "{}: line {}: the {} is empty (no tokens: only spaces, control or zero-width "
            "characters)",
            source, n, what);
    const auto features = make_squad_features(tok, {ex}, task.squad);
    const SpanOutputs out = run_spans(model, be, features, 8, tok.pad_id(), false);
    const SquadPrediction p =
        postprocess_squad({ex}, features, out.start, out.end, task.squad_answers)[0];
    if (json) {
      ojson j{{"line", n}, {"question", ex.question}, {"context", ex.context},
              {"answer", p.text}, {"score", p.score}, {"probability", p.probability}};
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
    std::string model, adapter, task, input = "-";
    Columns columns;
    bool json = false, no_header = false;
    int max_seq_length = 0;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "predict",
      "predictions of a fine-tuned model for each line of a file or stdin; its task decides the "
      "format");
  c->footer(
      "Input (one example a line) -> output, by the model's task:\n"
      "  single-sentence classification (sst2 cola, tsv): a sentence -> label<TAB>label=prob...\n"
      "  sentence pairs (mrpc rte qnli, tsv pairs): first<TAB>second -> the same\n"
      "  regression (stsb, tsv --regression): a sentence (pair) -> the score\n"
      "  NER (conll2003): words separated by spaces -> word/TAG for every word\n"
      "  QA (squad): {\"question\": ..., \"context\": ...} or question<TAB>context -> "
      "answer<TAB>probability\n"
      "A classifier whose task is unknown (a converted checkpoint) takes a sentence or a\n"
      "first<TAB>second pair on each line.\n"
      "Labels: the model's own class names (a converted classifier's id2label, e.g. NEGATIVE,\n"
      "POSITIVE; a tsv task's --labels); where it has none (ids 0, 1 or LABEL_0, LABEL_1), the\n"
      "task's as Hugging Face datasets names them: sst2 negative/positive, cola\n"
      "unacceptable/acceptable, mrpc not_equivalent/equivalent, rte and qnli\n"
      "entailment/not_entailment. stsb (regression) prints its score.\n"
      "Blank lines are skipped (one note on stderr counts them); output lines follow the other\n"
      "lines in order. --json echoes each input with its 1-based line number:\n"
      "  {\"line\", \"text\"[, \"text_pair\"], \"label\", \"probabilities\"} | {\"line\", \"text\"[, "
      "\"text_pair\"], \"score\"} |\n"
      "  {\"line\", \"words\", \"tags\"} | {\"line\", \"question\", \"context\", \"answer\", "
      "\"score\" (start + end logit),\n"
      "  \"probability\", \"start\", \"end\" (characters of the context)}\n"
      "TSV input (--text-column): the first line is a header (columns by name or index) unless\n"
      "--no-header; other columns (a label, an id) are ignored. For squad the two columns are the\n"
      "question and the context.\n"
      "Examples:\n"
      "  echo 'a gorgeous, witty movie' | bertrt predict --model sst2.brt\n"
      "  bertrt predict --model sst2.brt --input SST-2/dev.tsv --text-column sentence --json\n"
      "  bertrt predict --model mrpc.brt --input pairs.tsv --no-header --text-column 3 "
      "--text-pair-column 4");
  c->add_option("--model", o->model, "fine-tuned model (.brt); with --adapter, its base")->required();
  add_adapter_flag(c, o->adapter);
  c->add_option("--task", o->task,
                "the task of a model that does not record one (a converted checkpoint; a "
                "classifier needs none): " + preset_task_list() +
                "; else checked against the model's (optional)");
  c->add_option("--input", o->input, "the file to read, one example a line (default - : stdin)")
      ->check(not_empty("a file, or - for stdin"));
  const std::string g = "TSV input";
  auto* text_col = c->add_option("--text-column", o->columns.text_flag,
                                 "read the text from this column of a tab-separated --input: a "
                                 "header name or a 0-based index (as finetune --task tsv)")
                       ->check(not_empty("a column name or a 0-based index"))
                       ->group(g);
  c->add_option("--text-pair-column", o->columns.pair_flag,
                "the second text's column (sentence-pair tasks; squad's context)")
      ->check(not_empty("a column name or a 0-based index"))
      ->needs(text_col)
      ->group(g);
  c->add_flag("--no-header", o->no_header,
              "the first line of the TSV input is data (columns by index only)")
      ->needs(text_col)
      ->group(g);
  c->add_option("--max-seq-length", o->max_seq_length,
                "pieces (WordPiece tokens) per input; default: the value the model was fine-tuned "
                "with")
      ->check(at_least(3));  // [CLS] A [SEP]
  c->add_flag("--json", o->json, "one JSON object a line, with the input echoed (see below)");
  o->backend.add_to(c);
  c->callback([o] {
    check_input_file("--model", o->model);
    const bool from_stdin = o->input == "-";
    if (!from_stdin) check_input_file("--input", o->input);
    const std::string source = from_stdin ? "stdin" : o->input;
    LoadedModel m = load_model(o->model);
    apply_adapter_flag(m, o->model, o->adapter);
    TaskDefinition task = model_task(m, o->model, o->task, /*head_is_enough=*/true);
    if (o->max_seq_length > 0) task.max_seq_length = task.squad.max_seq_length = o->max_seq_length;
    check_max_seq_length("--max-seq-length", task.max_seq_length,
                         m.model->config().max_position_embeddings);
    Columns& columns = o->columns;
    columns.header = !o->no_header;
    if (task.family() == TaskFamily::kSequence && !task.name.empty()) {
      if (task.pair && columns.given() && columns.pair_flag.empty())
        fail_usage("task {} takes sentence pairs: give --text-pair-column too", task.name);
      if (!task.pair && !columns.pair_flag.empty())
        fail_usage("task {} takes single sentences: --text-pair-column does not apply",
                   task.name);
    }
    if (task.family() == TaskFamily::kSpan && columns.given() && columns.pair_flag.empty())
      fail_usage("a question-answering model reads a question and a context: give "
                 "--text-column (the question) and --text-pair-column (the context)");
    if (task.family() == TaskFamily::kToken && !columns.pair_flag.empty())
      fail_usage("task {} tags the words of one text: --text-pair-column does not apply",
                 task.name.empty() ? "of the model" : task.name);
    const std::vector<std::string> labels = model_labels(m, task);
    auto be = o->backend.make_inference();
    const Predictor p{task, labels, *m.model, *m.tokenizer, *be, o->json, source, columns};
    std::ifstream file;
    if (!from_stdin) {
      file.open(o->input, std::ios::binary);
      if (!file) fail("--input {}: cannot open: {}", o->input, std::strerror(errno));
    }
    std::vector<size_t> blanks;
    for_each_line(from_stdin ? std::cin : file, source, [&](const std::string& raw, size_t n) {
      std::string line = raw;
      if (n == 1) drop_utf8_bom(line);
      if (columns.given() && n == 1) {
        columns.resolve(line, source);
        if (columns.header) return;
      }
      if (blank(line)) {
        blanks.push_back(n);
        return;
      }
      switch (task.family()) {
        case TaskFamily::kSequence: p.sequence(line, n); break;
        case TaskFamily::kToken: p.tokens(line, n); break;
        case TaskFamily::kSpan: p.span(line, n); break;
      }
      std::fflush(stdout);
    });
    if (!blanks.empty()) {
      std::string which;
      for (size_t i = 0; i < blanks.size() && i < 5; ++i)
        which += fmt::format("{}{}", i ? ", " : "", blanks[i]);
      if (blanks.size() > 5) which += ", ...";
      fmt::print(stderr, "bertrt: note: skipped {} blank line{} of {} (line{} {})\n",
                 blanks.size(), blanks.size() == 1 ? "" : "s", source,
                 blanks.size() == 1 ? "" : "s", which);
    }
  });
}

}  // namespace bertrt::cli
