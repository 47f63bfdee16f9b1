#include "finetune_reranker.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "embed/embedder.h"
#include "progress.h"
#include "train/metrics_log.h"
#include "train/reranker_trainer.h"

namespace bertrt::cli {

void run_reranker_finetune(const EmbeddingFinetuneRun& r) {
  check_input_file("--model", r.model);
  check_input_file("--train", r.train);
  if (!r.dev.empty()) check_input_file("--dev", r.dev);
  check_output_path("-o", r.out);
  if (!r.metrics.empty()) check_output_path("--metrics", r.metrics);
  check_distinct_files({{"-o", r.out}, {"--metrics", r.metrics}},
                       {{"--model", r.model}, {"--train", r.train}, {"--dev", r.dev}});
  check_positive("--learning-rate", r.lr);
  check_positive("--weight-decay", r.weight_decay, /*allow_zero=*/true);
  if (!(r.warmup_ratio >= 0 && r.warmup_ratio <= 1))
    fail_usage("--warmup-ratio must be in [0, 1], got {}", r.warmup_ratio);
  if (!(r.hidden_dropout >= 0.0f && r.hidden_dropout < 1.0f))
    fail_usage("--hidden-dropout-prob must be in [0, 1), got {}", r.hidden_dropout);
  if (!(r.attention_dropout >= 0.0f && r.attention_dropout < 1.0f))
    fail_usage("--attention-probs-dropout-prob must be in [0, 1), got {}", r.attention_dropout);

  LoadedModel m = load_model(r.model);
  BertModel& model = *m.model;
  const int most = model.config().max_position_embeddings;
  if (r.max_seq_length > 0) check_max_seq_length("--max-seq-length", r.max_seq_length, most);
  // CrossEncoder truncates at its tokenizer's model_max_length, as `bertrt rerank` does.
  const int max_len = r.max_seq_length > 0 ? r.max_seq_length : tokenizer_max_length(m.metadata, most);
  if (model.heads().resolved_kind() != HeadKind::kRegression) {
    HeadsConfig h;  // the encoder and a fresh one-output classifier; other heads are dropped
    h.kind = HeadKind::kRegression;
    model.set_heads(h, r.seed);
  }
  const ArticleRange train_articles = r.train_articles.empty()
      ? ArticleRange{} : parse_article_range(r.train_articles, "--train-articles");
  const ArticleRange dev_articles = r.dev_articles.empty()
      ? ArticleRange{} : parse_article_range(r.dev_articles, "--dev-articles");
  const PairData train = read_rerank_file(r.train, train_articles, r.seed);
  // Dev: a SQuAD question's paragraph among 9 of other articles (10 candidates, mrr@10).
  PairData dev;
  if (!r.dev.empty()) dev = read_rerank_file(r.dev, dev_articles, r.seed + 1, 9);

  auto be = r.backend->make();
  const OptimOptions opt = pair_run_optim(r, train.rows.size());
  const int64_t total = opt.total_steps;
  Trainer trainer(model, *be, opt);
  trainer.set_dropout(r.hidden_dropout, r.seed, r.attention_dropout);

  MetricsLog metrics = r.metrics.empty() ? MetricsLog() : MetricsLog(r.metrics);
  auto log_dev = [&](const char* when) {
    if (r.dev.empty()) return;
    const auto d = evaluate_reranker(model, *m.tokenizer, *be, dev, max_len, r.eval_batch_size);
    fmt::print(stderr, "dev {} step {}: mrr@10 {:.4f}, ndcg@10 {:.4f} ({} queries)\n", when,
               trainer.steps_done(), d.at("mrr@10"), d.at("ndcg@10"), d.at("queries"));
    metrics.write({{"eval", "dev"}, {"step", trainer.steps_done()}, {"examples", d.at("queries")},
                   {"mrr@10", d.at("mrr@10")}, {"ndcg@10", d.at("ndcg@10")}});
  };
  fmt::print(stderr, "{}: {} (query, passage, label) rows, binary cross-entropy, {} steps\n",
             r.train, train.rows.size(), total);
  log_dev("at");
  ProgressBar bar("finetune reranker", total);
  finetune_pair_rows(
      trainer, train, r.batch_size, total, r.seed,
      [&](const std::vector<PairRow>& batch) {
        return reranker_forward_backward(model, *m.tokenizer, *be, batch, max_len);
      },
      [&](const EmbeddingStepLog& s) {
        bar.update(s.step, fmt::format("epoch {} loss {:.4f}", s.epoch + 1, s.result.fwd.loss));
        metrics.write({{"step", s.step},
                       {"epoch", s.epoch + 1},
                       {"loss", s.result.fwd.loss},
                       {"learning_rate", s.result.learning_rate},
                       {"grad_norm", s.result.grad_norm},
                       {"elapsed_seconds", s.elapsed_seconds}});
      });
  bar.finish();
  log_dev("after");
  std::map<std::string, std::string> meta = m.metadata;
  meta.erase("task");  // an earlier task's record would not describe this head
  meta["finetune_reranker"] =
      nlohmann::json{{"loss", "BCEWithLogitsLoss"}, {"steps", total}, {"train", r.train},
                     {"max_seq_length", max_len}}.dump();
  save_model(r.out, model, *m.tokenizer, meta);
  fmt::print("wrote {}\n", r.out);
}

}  // namespace bertrt::cli
