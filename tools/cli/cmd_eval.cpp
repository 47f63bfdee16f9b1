// bertrt eval / predict: a fine-tuned classifier on a task's TSV, or on stdin lines.
#include <fmt/format.h>

#include "common.h"
#include "core/error.h"
#include "io/model_io.h"
#include "tasks/tsv_task.h"
#include "train/finetune.h"

namespace bertrt::cli {

namespace {

void require_classifier(const BertModel& model, const std::string& path) {
  if (!model.heads().classifier())
    fail("{}: the model has no classification head; fine-tune it first (bertrt finetune)", path);
}

}  // namespace

void add_eval(CLI::App& app) {
  struct Opts {
    std::string model, task, data;
    bool json = false;
    int batch_size = 32, max_seq_length = 128;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand("eval", "accuracy of a fine-tuned model on a task's TSV");
  c->add_option("--model", o->model, "fine-tuned model (.brt)")->required();
  c->add_option("--task", o->task, "task name (sst2)")->required();
  c->add_option("--data", o->data, "labelled TSV (e.g. SST-2 dev.tsv)")->required();
  c->add_option("--batch-size", o->batch_size, "examples per forward pass")->capture_default_str();
  c->add_option("--max-seq-length", o->max_seq_length, "truncate longer examples")->capture_default_str();
  c->add_flag("--json", o->json, "print {\"task\", \"accuracy\", \"examples\", \"loss\"}");
  o->backend.add_to(c);
  c->callback([o] {
    check_input_file("--model", o->model);
    check_input_file("--data", o->data);
    if (o->batch_size < 1) fail("--batch-size must be ≥ 1, got {}", o->batch_size);
    const TaskSpec& spec = glue_task(o->task);
    LoadedModel m = load_model(o->model);
    require_classifier(*m.model, o->model);
    if (m.model->heads().num_labels() != int(spec.labels.size()))
      fail("{}: the model has {} labels, task {} has {}", o->model, m.model->heads().num_labels(),
           o->task, spec.labels.size());
    check_max_seq_length("--max-seq-length", o->max_seq_length,
                         m.model->config().max_position_embeddings);
    const auto examples = encode_examples(*m.tokenizer, read_glue_tsv(o->data, spec), o->max_seq_length);
    auto be = o->backend.make();
    const ClassificationEval ev = evaluate_classification(*m.model, *be, examples, o->batch_size,
                                                          m.tokenizer->pad_id());
    if (o->json)
      fmt::print("{}\n", nlohmann::json{{"task", o->task}, {"accuracy", ev.accuracy},
                                        {"examples", ev.examples}, {"loss", ev.loss}}.dump());
    else
      fmt::print("{} {}: accuracy {:.4f} on {} examples (loss {:.4f})\n", o->task, o->data,
                 ev.accuracy, ev.examples, ev.loss);
  });
}

void add_predict(CLI::App& app) {
  struct Opts {
    std::string model;
    bool json = false;
    int max_seq_length = 128;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "predict", "classify stdin lines (a tab separates a pair): label and probabilities");
  c->add_option("--model", o->model, "fine-tuned model (.brt)")->required();
  c->add_option("--max-seq-length", o->max_seq_length, "truncate longer examples")->capture_default_str();
  c->add_flag("--json", o->json, "one JSON object a line: {\"label\", \"probabilities\"}");
  o->backend.add_to(c);
  c->callback([o] {
    check_input_file("--model", o->model);
    LoadedModel m = load_model(o->model);
    require_classifier(*m.model, o->model);
    check_max_seq_length("--max-seq-length", o->max_seq_length,
                         m.model->config().max_position_embeddings);
    auto be = o->backend.make();
    const auto& labels = m.model->heads().labels;
    for_each_stdin_line([&](const std::string& line, size_t) {
      const size_t tab = line.find('\t');
      TextExample ex{line.substr(0, tab), std::nullopt, -1};
      if (tab != std::string::npos) ex.text_b = line.substr(tab + 1);
      const auto enc = encode_examples(*m.tokenizer, {ex}, o->max_seq_length);
      const ClassificationEval ev = evaluate_classification(*m.model, *be, enc, 1, m.tokenizer->pad_id());
      const auto& p = ev.probabilities[0];
      const std::string& label = labels[ev.predictions[0]];
      if (o->json) {
        nlohmann::json probs;
        for (size_t k = 0; k < labels.size(); ++k) probs[labels[k]] = p[k];
        fmt::print("{}\n", nlohmann::json{{"label", label}, {"probabilities", probs}}.dump());
      } else {
        std::string s;
        for (size_t k = 0; k < labels.size(); ++k) s += fmt::format("\t{}={:.4f}", labels[k], p[k]);
        fmt::print("{}{}\n", label, s);
      }
    });
  });
}

}  // namespace bertrt::cli
