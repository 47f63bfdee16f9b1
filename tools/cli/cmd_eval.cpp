// bertrt eval: a fine-tuned model on its task's data (the task's metrics). The model records its
// task (`bertrt finetune`), which decides the data format and the metrics. `predict` is
// cmd_predict.cpp.
#include <fmt/format.h>

#include "common.h"
#include "lora_flags.h"
#include "core/error.h"
#include "core/json_excerpt.h"
#include "embed/embedding_eval.h"
#include "forward_input.h"
#include "io/model_io.h"
#include "task_flags.h"
#include "train/metrics_report.h"
#include "train/task_data.h"
#include "train/task_inference.h"

namespace bertrt::cli {

namespace {

struct Opts {
  std::string model, adapter, task, data, articles, prompt_name, corpus_prompt_name, pooling;
  bool json = false;
  int batch_size = 32, max_seq_length = 0, dimensions = 0;
  BackendChoice backend;
};

// --task sts / retrieval: a sentence-embedding model (embed/embedding_eval.h).
void eval_embeddings(const Opts& o) {
  if (o.max_seq_length > 0)
    fail_usage("--max-seq-length: an embedding model truncates at its own max_seq_length");
  if (o.task == "sts" && !o.articles.empty()) fail_usage("--articles applies to --task retrieval");
  LoadedModel m = load_model(o.model);
  apply_adapter_flag(m, o.model, o.adapter);
  auto be = o.backend.make_inference();
  EmbedOptions eo;
  eo.dimensions = o.dimensions;
  eo.pooling = o.pooling;
  eo.batch_size = o.batch_size;
  EmbedOptions qo = eo;
  eo.prompt_name = o.corpus_prompt_name;
  qo.prompt_name = o.prompt_name;
  const int dim = embedding_dim(*m.model, eo);
  EmbeddingMetrics metrics;
  size_t examples = 0, corpus = 0;
  if (o.task == "sts") {
    if (!o.corpus_prompt_name.empty()) fail_usage("--corpus-prompt-name applies to --task retrieval");
    const std::vector<StsPair> pairs = read_sts_tsv(o.data);
    metrics = evaluate_sts(*m.model, *m.tokenizer, *be, pairs, qo);
    examples = pairs.size();
  } else {
    const ArticleRange a =
        o.articles.empty() ? ArticleRange{} : parse_article_range(o.articles, "--articles");
    const SquadDataset data = read_squad(o.data);
    const std::vector<SquadExample> ex =
        a.all() ? data.examples : select_articles(data, a.first, a.last);
    const RetrievalSet set = squad_retrieval(ex);
    metrics = evaluate_retrieval(*m.model, *m.tokenizer, *be, set, eo, qo);
    examples = set.queries.size();
    corpus = set.corpus.size();
  }
  if (o.json) {
    nlohmann::ordered_json j;
    j["task"] = o.task;
    for (const auto& [name, value] : metrics) j[name] = value;
    j["examples"] = examples;
    if (corpus) j["corpus"] = corpus;
    j["dimensions"] = dim;
    fmt::print("{}\n", j.dump());
    return;
  }
  std::string text;
  for (const auto& [name, value] : metrics)
    if (o.task == "sts" || name == "cosine_ndcg@10" || name == "cosine_mrr@10" ||
        name == "cosine_recall@1" || name == "cosine_recall@10")
      text += fmt::format("{}{} {:.4f}", text.empty() ? "" : ", ", name, value);
  fmt::print("{} {}: {} on {} {}{} ({} dimensions)\n", o.task, o.data, text, examples,
             o.task == "sts" ? "pairs" : "queries",
             corpus ? fmt::format(" against {} paragraphs", corpus) : "", dim);
}

}  // namespace

void add_eval(CLI::App& app) {
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
      "spearman and (conll2003) f1 / precision / recall for one more release.\n"
      "Sentence-embedding models (sentence-transformers' evaluators' names): --task sts on a TSV\n"
      "naming sentence1, sentence2, score (GLUE STS-B): cosine_pearson, cosine_spearman;\n"
      "--task retrieval on SQuAD JSON (each question against every paragraph): cosine_ndcg@10,\n"
      "cosine_mrr@10, cosine_recall@1, cosine_recall@10 (--json: also accuracy@k, precision@k,\n"
      "recall@k for k = 1, 3, 5, 10 and cosine_map@100).");
  c->add_option("--model", o->model, "fine-tuned model (.brt); with --adapter, its base")->required();
  add_adapter_flag(c, o->adapter);
  c->add_option("--task", o->task,
                "check that the model was fine-tuned for this task; names the task (and so the "
                "data format) of a model that does not record one, e.g. a converted checkpoint: "
                + preset_task_list() + "; sts or retrieval for an embedding model (optional)");
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
  c->add_option("--dimensions", o->dimensions,
                "sts, retrieval: keep the first D dimensions of the embeddings (Matryoshka)")
      ->check(at_least(1));
  c->add_option("--prompt-name", o->prompt_name,
                "sts: the model's prompt for both sentences; retrieval: for the questions");
  c->add_option("--corpus-prompt-name", o->corpus_prompt_name,
                "retrieval: the model's prompt for the paragraphs");
  c->add_option("--pooling", o->pooling, "sts, retrieval: pool a model without an embedding head")
      ->check(CLI::IsMember({"cls", "mean", "max", "mean_sqrt_len_tokens", "weightedmean",
                             "lasttoken"}));
  o->backend.add_to(c);
  c->callback([o] {
    if (o->task == "sts" || o->task == "retrieval") {
      check_input_file("--model", o->model);
      check_input_file("--data", o->data);
      return eval_embeddings(*o);
    }
    if (o->dimensions || !o->prompt_name.empty() || !o->corpus_prompt_name.empty() ||
        !o->pooling.empty())
      fail_usage("--dimensions, --prompt-name, --corpus-prompt-name and --pooling apply to "
                 "--task sts and retrieval");
    check_input_file("--model", o->model);
    check_input_file("--data", o->data);
    LoadedModel m = load_model(o->model);
    apply_adapter_flag(m, o->model, o->adapter);
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
