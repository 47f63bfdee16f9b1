// bertrt eval: a fine-tuned model on its task's data (the task's metrics). The model records its
// task (`bertrt finetune`), which decides the data format and the metrics. `predict` is
// cmd_predict.cpp.
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
                "check that the model was fine-tuned for this task; names the task (and so the "
                "data format) of a model that does not record one, e.g. a converted checkpoint: "
                + preset_task_list() + " (optional)");
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

}  // namespace bertrt::cli
