#include "finetune_embeddings.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "interrupt.h"
#include "core/error.h"
#include "embed/embedding_eval.h"
#include "io/adapter_io.h"
#include "io/model_io.h"
#include "progress.h"
#include "train/checkpoint.h"
#include "train/embedding_trainer.h"
#include "train/metrics_log.h"
#include "train/schedule.h"

namespace bertrt::cli {

namespace {

std::vector<int> parse_dims(const std::string& text) {
  std::vector<int> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma - begin);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > (1 << 20))
      fail_usage("--matryoshka-dims {}: expected positive integers separated by commas, e.g. "
                 "384,256,128,64", text);
    out.push_back(int(v));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

PairFileOptions pair_options(const std::string& score_range, const std::string& articles,
                             const char* articles_flag) {
  PairFileOptions o;
  if (!score_range.empty()) {
    const size_t comma = score_range.find(',');
    char *e1 = nullptr, *e2 = nullptr;
    const std::string a = score_range.substr(0, comma);
    const std::string b = comma == std::string::npos ? "" : score_range.substr(comma + 1);
    o.score_lo = std::strtod(a.c_str(), &e1);
    o.score_hi = std::strtod(b.c_str(), &e2);
    if (a.empty() || b.empty() || *e1 || *e2 || !(o.score_lo < o.score_hi))
      fail_usage("--score-range {}: expected LO,HI with LO < HI, e.g. 0,5", score_range);
  }
  if (!articles.empty()) o.articles = parse_article_range(articles, articles_flag);
  return o;
}

// The dev metrics: an STS TSV (sentence1, sentence2, score) or SQuAD JSON (retrieval).
EmbeddingMetrics dev_metrics(BertModel& model, const Tokenizer& tok, Backend& be,
                             const std::string& dev, const ArticleRange& articles, int batch,
                             size_t& examples) {
  EmbedOptions o;
  o.batch_size = batch;
  if (dev.size() >= 5 && dev.compare(dev.size() - 5, 5, ".json") == 0) {
    const SquadDataset s = read_squad(dev);
    const RetrievalSet set = squad_retrieval(
        articles.all() ? s.examples : select_articles(s, articles.first, articles.last));
    examples = set.queries.size();
    return evaluate_retrieval(model, tok, be, set, o, o);
  }
  const std::vector<StsPair> pairs = read_sts_tsv(dev);
  examples = pairs.size();
  return evaluate_sts(model, tok, be, pairs, o);
}

std::string metrics_line(const EmbeddingMetrics& m) {
  std::string s;
  for (const auto& [name, value] : m)
    if (name == "cosine_pearson" || name == "cosine_spearman" || name == "cosine_ndcg@10" ||
        name == "cosine_mrr@10" || name == "cosine_recall@1")
      s += fmt::format("{}{} {:.4f}", s.empty() ? "" : ", ", name, value);
  return s;
}

}  // namespace

OptimOptions pair_run_optim(const EmbeddingFinetuneRun& r, size_t rows) {
  const int64_t per_epoch = int64_t((rows + size_t(r.batch_size) - 1) / size_t(r.batch_size));
  OptimOptions opt;
  opt.learning_rate = r.lr;
  opt.total_steps = r.max_steps > 0 ? r.max_steps : per_epoch * r.epochs;
  opt.warmup_steps = int64_t(std::ceil(double(r.warmup_ratio) * double(opt.total_steps)));
  opt.weight_decay = r.weight_decay;
  return opt;
}

void add_embedding_finetune_flags(CLI::App* c, EmbeddingFinetuneFlags& f) {
  const std::string g = "Sentence embeddings (--task sentence-embedding)";
  f.options = {
      c->add_option("--loss", f.loss,
                    "mnrl (MultipleNegativesRankingLoss: anchor, positive[, negative] rows, "
                    "in-batch negatives; default), cached-mnrl (CachedMultipleNegativesRankingLoss: "
                    "mnrl's update in the memory of --mini-batch-size texts, for large batches), "
                    "cosent (CoSENTLoss) or cosine (CosineSimilarityLoss): sentence1, sentence2, "
                    "score rows")
          ->check(CLI::IsMember({"mnrl", "cached-mnrl", "cosent", "cosine"}))
          ->group(g),
      c->add_option("--mini-batch-size", f.mini_batch_size,
                    "cached-mnrl: texts per forward (GradCache: the batch is embedded without "
                    "activations, then re-embedded this many texts at a time for the backward)")
          ->capture_default_str()
          ->check(CLI::PositiveNumber)
          ->group(g),
      c->add_option("--scale", f.scale, "mnrl and cosent: similarity scale (1 / temperature)")
          ->capture_default_str()
          ->group(g),
      c->add_option("--matryoshka-dims", f.matryoshka_dims,
                    "MatryoshkaLoss: the loss summed over these leading dimensions, e.g. "
                    "384,256,128,64 (default: the full width only)")
          ->group(g),
      c->add_option("--score-range", f.score_range,
                    "LO,HI of the training and dev scores, mapped to [0, 1] (default 0,5 for GLUE "
                    "STS-B files, else 0,1); a score outside is an error")
          ->group(g),
      c->add_option("--pooling", f.pooling,
                    "give a model without an embedding head one: cls, mean, max, "
                    "mean_sqrt_len_tokens, weightedmean or lasttoken")
          ->check(CLI::IsMember({"cls", "mean", "max", "mean_sqrt_len_tokens", "weightedmean",
                                 "lasttoken"}))
          ->group(g)};
  f.mini_batch_option = f.options[1];
}

void run_embedding_finetune(const EmbeddingFinetuneRun& r, const EmbeddingFinetuneFlags& f) {
  const bool resuming = !r.resume.empty();
  const std::string& model_path = resuming ? r.resume : r.model;
  check_input_file(resuming ? "--resume" : "--model", model_path);
  check_input_file("--train", r.train);
  if (!r.dev.empty()) check_input_file("--dev", r.dev);
  check_output_path("-o", r.out);
  if (!r.metrics.empty()) check_output_path("--metrics", r.metrics);
  check_distinct_files({{"-o", r.out}, {"-o's checkpoint", resume_path(r.out)}, {"--metrics", r.metrics}},
                       {{"--train", r.train}, {"--dev", r.dev}});
  check_distinct_files({{"-o", r.out}, {"--metrics", r.metrics}},
                       {{resuming ? "--resume" : "--model", model_path}});
  check_positive("--learning-rate", r.lr);
  check_positive("--weight-decay", r.weight_decay, /*allow_zero=*/true);
  check_positive("--scale", f.scale);
  if (!(r.warmup_ratio >= 0 && r.warmup_ratio <= 1))
    fail_usage("--warmup-ratio must be in [0, 1], got {}", r.warmup_ratio);
  if (!(r.hidden_dropout >= 0.0f && r.hidden_dropout < 1.0f))
    fail_usage("--hidden-dropout-prob must be in [0, 1), got {}", r.hidden_dropout);
  if (!(r.attention_dropout >= 0.0f && r.attention_dropout < 1.0f))
    fail_usage("--attention-probs-dropout-prob must be in [0, 1), got {}", r.attention_dropout);
  if (r.batch_size < 2) fail_usage("--batch-size {}: in-batch negatives need at least 2 rows", r.batch_size);
  EmbeddingLoss loss;
  const bool cached = f.loss == "cached-mnrl";
  if (!cached && f.mini_batch_option && f.mini_batch_option->count())
    fail_usage("--mini-batch-size applies to --loss cached-mnrl (got --loss {})", f.loss);
  loss.kind = parse_embedding_loss(cached ? "mnrl" : f.loss);
  if (cached) loss.mini_batch_size = f.mini_batch_size;
  // Each mini-batch's forwards would move the activation observers between the pass that
  // computes the cached gradient and the pass that applies it (as --recompute with --qat).
  if (cached && r.qat->enabled())
    fail_usage("--loss cached-mnrl with --qat int8: the re-embedding would see other "
               "quantization ranges than the embeddings its gradient was computed from; use "
               "--loss mnrl");
  loss.scale = f.scale;
  if (!f.matryoshka_dims.empty()) loss.matryoshka_dims = parse_dims(f.matryoshka_dims);

  LoadOptions load;
  load.training_state = resuming;  // only a resumed run reads the optimizer moments
  LoadedModel m = load_model(model_path, load);
  BertModel& model = *m.model;
  // A checkpoint already has the head --pooling gave the run (the run record compares the flag).
  if (!resuming && (!f.pooling.empty() || !model.heads().embedding)) {
    if (f.pooling.empty())
      fail("--model {}: has no sentence-embedding head: convert a sentence-transformers folder, "
           "or give --pooling (mean, cls, ...) to fine-tune this encoder into one", r.model);
    if (model.heads().embedding)
      fail_usage("--pooling: {} already has an embedding head ({} pooling)", r.model,
                 model.heads().embedding->pooling.mode_string());
    EmbedOptions eo;
    eo.pooling = f.pooling;
    HeadsConfig h;  // the encoder alone with the new pooling; other heads are dropped
    h.embedding = embedding_head(model, eo);
    model.set_heads(h, r.seed);
  }
  if (!model.heads().embedding)
    fail("--resume {}: the checkpoint has no sentence-embedding head", r.resume);
  if (r.max_seq_length > 0 && r.max_seq_length != model.heads().embedding->max_seq_length) {
    // sentence-transformers' model.max_seq_length: the texts' truncation, kept in -o.
    check_max_seq_length("--max-seq-length", r.max_seq_length,
                         model.config().max_position_embeddings);
    HeadsConfig h = model.heads();
    h.embedding->max_seq_length = r.max_seq_length;
    model.set_heads(h, r.seed);  // the same tensors: every weight kept
  }
  // After the head is set, as finetune's other tasks: fake-quant Linears for --qat int8, or
  // adapters over the frozen base for --lora-r (its checksum taken first, for the adapter file).
  apply_qat(model, *r.qat, model_path);
  const bool lora = r.lora && r.lora->enabled();
  uint32_t base_checksum = 0;
  if (lora) {
    base_checksum = adapter_base_checksum(model);
    model.attach_lora(r.lora->config(), r.seed, r.lora->where());
    fmt::print(stderr, "{}\n", lora_summary(model, *r.lora));
  }
  const int D = model.heads().embedding->dim(model.config().hidden_size);
  for (int d : loss.matryoshka_dims)
    if (d > D) fail_usage("--matryoshka-dims: {} is above the model's embedding width {}", d, D);

  const PairData train = read_pair_file(r.train, pair_options(f.score_range, r.train_articles,
                                                              "--train-articles"));
  if (loss.needs_labels() && !train.scored)
    fail("--train {}: --loss {} needs a score a row (columns sentence1, sentence2, score)", r.train,
         f.loss);
  if (!loss.needs_labels() && train.scored)
    fail("--train {}: --loss {} takes (anchor, positive) rows; this file scores its pairs: use "
         "--loss cosent or cosine", r.train, f.loss);
  const ArticleRange dev_articles =
      r.dev_articles.empty() ? ArticleRange{} : parse_article_range(r.dev_articles, "--dev-articles");

  auto be = r.backend->make();
  const OptimOptions opt = pair_run_optim(r, train.rows.size());
  const int64_t total = opt.total_steps;
  Trainer trainer(model, *be, opt);
  trainer.set_dropout(r.hidden_dropout, r.seed, r.attention_dropout);

  // The flags that decide the run's batches and updates, in a checkpoint so that --resume refuses
  // a run that would not continue it (as `finetune`'s other tasks).
  std::error_code ec;
  nlohmann::json run = {{"task", "sentence-embedding"},
                        {"train", r.train},
                        {"train_bytes", std::filesystem::file_size(r.train, ec)},
                        {"train_articles", r.train_articles},
                        {"loss", f.loss},
                        {"scale", std::stod(fmt::format("{}", f.scale))},
                        {"matryoshka_dims", f.matryoshka_dims},
                        {"score_range", f.score_range},
                        {"pooling", f.pooling},
                        {"max_seq_length", model.heads().embedding->max_seq_length},
                        {"batch_size", r.batch_size},
                        {"total_steps", total},
                        {"learning_rate", r.lr},
                        {"warmup_ratio", r.warmup_ratio},
                        {"weight_decay", r.weight_decay},
                        {"seed", r.seed},
                        {"backend", r.backend->name}};
  if (cached) run["mini_batch_size"] = f.mini_batch_size;
  if (r.hidden_dropout > 0.0f)
    run["hidden_dropout_prob"] = std::stod(fmt::format("{}", r.hidden_dropout));
  if (r.attention_dropout > 0.0f)
    run["attention_probs_dropout_prob"] = std::stod(fmt::format("{}", r.attention_dropout));
  if (resuming) {
    check_resumable(r.resume, m, run);
    restore_training_state(trainer, *m.training_state, r.resume);  // copies the moments
    m.file.release_optimizer_pages();
    fmt::print(stderr, "resuming {} at step {} of {}\n", r.resume, trainer.steps_done(), total);
  }

  MetricsLog metrics = r.metrics.empty() ? MetricsLog()
                       : resuming        ? MetricsLog(r.metrics, trainer.steps_done())
                                         : MetricsLog(r.metrics);
  auto log_dev = [&](const char* when) {
    if (r.dev.empty()) return;
    size_t examples = 0;
    const EmbeddingMetrics d =
        dev_metrics(model, *m.tokenizer, *be, r.dev, dev_articles, r.eval_batch_size, examples);
    fmt::print(stderr, "dev {} step {}: {} ({} {})\n", when, trainer.steps_done(), metrics_line(d),
               examples, r.dev.size() >= 5 && r.dev.compare(r.dev.size() - 5, 5, ".json") == 0
                             ? "queries" : "pairs");
    nlohmann::ordered_json j;
    j["eval"] = "dev";
    j["step"] = trainer.steps_done();
    j["examples"] = examples;
    for (const auto& [k, v] : d) j[k] = v;
    metrics.write(nlohmann::json::parse(j.dump()));
  };
  fmt::print(stderr, "{}: {} rows of {} text{}, --loss {} on a {}-wide embedding, {} steps\n",
             r.train, train.rows.size(), train.rows.front().texts.size(),
             train.rows.front().texts.size() == 1 ? "" : "s", f.loss, D, total);
  if (!resuming) log_dev("at");
  std::map<std::string, std::string> meta = m.metadata;
  meta.erase(kFinetuneRunKey);  // a checkpoint's: the finished model has none
  meta["finetune_embedding"] =
      nlohmann::json{{"loss", f.loss}, {"scale", f.scale}, {"steps", total},
                     {"train", r.train}, {"matryoshka_dims", loss.matryoshka_dims}}.dump();
  if (cached) {
    auto j = nlohmann::json::parse(meta["finetune_embedding"]);
    j["mini_batch_size"] = f.mini_batch_size;
    meta["finetune_embedding"] = j.dump();
  }
  catch_stop_signals();
  ProgressBar bar("finetune sentence-embedding", total);
  finetune_embeddings(trainer, model, *m.tokenizer, *be, loss, train, r.batch_size, total, r.seed,
                      [&](const EmbeddingStepLog& s) {
                        bar.update(s.step, fmt::format("epoch {} loss {:.4f}", s.epoch + 1,
                                                       s.result.fwd.loss));
                        metrics.write({{"step", s.step},
                                       {"epoch", s.epoch + 1},
                                       {"loss", s.result.fwd.loss},
                                       {"learning_rate", s.result.learning_rate},
                                       {"grad_norm", s.result.grad_norm},
                                       {"elapsed_seconds", s.elapsed_seconds}});
                        // SIGINT/SIGTERM (interrupt.h): this step's checkpoint, then out.
                        if (const int sig = stop_signal(); sig && s.step != total) {
                          bar.stop(s.step, signal_name(sig));
                          if (r.qat->enabled() || lora)
                            throw Interrupted(
                                sig, fmt::format("{} at step {} of {}: no checkpoint written "
                                                 "({} runs cannot resume yet); {} is "
                                                 "unchanged",
                                                 signal_name(sig), s.step, total,
                                                 lora ? "LoRA" : "--qat int8", r.out));
                          auto ckpt_meta = meta;
                          ckpt_meta[kFinetuneRunKey] = run.dump();
                          const std::string ckpt = resume_path(r.out);
                          save_model(ckpt, model, *m.tokenizer, ckpt_meta,
                                     capture_training_state(trainer, {},
                                                            uint64_t(s.step) * uint64_t(r.batch_size)));
                          throw Interrupted(
                              sig, fmt::format("{} at step {} of {}: wrote the resumable checkpoint "
                                               "{} (continue with --resume {} in place of --model, "
                                               "the other flags the same; {} is written when the "
                                               "run finishes)",
                                               signal_name(sig), s.step, total, ckpt, ckpt, r.out));
                        }
                      });
  bar.finish();
  log_dev("after");
  if (lora)  // the adapters and the embedding head's settings, not a model
    save_adapter(r.out, model, *m.tokenizer, base_checksum, meta,
                 std::filesystem::path(model_path).filename().string());
  else
    save_finetuned(r.out, model, *m.tokenizer, meta, *r.qat);  // int8 with --qat int8
  remove_resume_checkpoint(r.out);  // an earlier step of this run
  fmt::print("wrote {}\n", r.out);
}

}  // namespace bertrt::cli
