// bertrt pretrain: MLM + NSP pre-training on a plain-text corpus (paper §3.1, A.2).
#include <fmt/format.h>

#include <cstdio>

#include "common.h"
#include "core/error.h"
#include "io/model_io.h"
#include "progress.h"
#include "train/metrics_log.h"
#include "train/pretrain.h"
#include "train/schedule.h"

namespace bertrt::cli {

namespace {

nlohmann::json eval_json(const PretrainEval& e) {
  return {{"mlm_loss", e.mlm_loss}, {"mlm_accuracy", e.mlm_accuracy}, {"nsp_loss", e.nsp_loss},
          {"nsp_accuracy", e.nsp_accuracy}, {"examples", e.examples}, {"masked_tokens", e.masked}};
}

Documents load_corpus(const std::string& flag, const std::string& path, const Tokenizer& tok,
                      bool split_sentences) {
  ProgressBar bar("reading " + flag, 1000);
  CorpusOptions co;
  co.min_documents = 2;  // NSP's random next segment comes from another document
  co.split_sentences = split_sentences;
  co.progress = [&bar](size_t done, size_t total) {
    if (total) bar.update(int64_t(done * 1000 / total), fmt::format("{:.1f} MB", done / 1e6));
  };
  CorpusStats stats;
  Documents docs = read_corpus(path, tok, co, &stats);
  bar.finish(fmt::format("{} documents, {} lines, {:.2f} M tokens", stats.documents, stats.lines,
                         stats.tokens / 1e6));
  if (stats.invalid_utf8_lines)
    fmt::print(stderr, "warning: {}: {} lines hold invalid UTF-8 (first: line {}); those bytes were dropped\n",
               path, stats.invalid_utf8_lines, stats.first_invalid_utf8_line);
  return docs;
}

}  // namespace

void add_pretrain(CLI::App& app) {
  struct Opts {
    std::string model, valid, out, metrics;
    std::vector<std::string> corpus;  // files and folders
    int dupe_factor = 10;
    size_t shard_documents = 500;
    float short_seq_prob = 0.1f;
    bool dynamic_masking = false, whole_word_mask = false, no_nsp = false, doc_sentences = false;
    int64_t max_steps = 0;
    int batch_size = 32, max_seq_length = 128, max_predictions = 20, valid_examples = 2000;
    float lr = 1e-4f, warmup_ratio = 0.01f, weight_decay = 0.01f, masked_lm_prob = 0.15f;
    uint64_t seed = 12345;
    bool no_sentence_split = false;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand("pretrain", "MLM + NSP pre-training on a plain-text corpus");
  c->add_option("--model", o->model, "initial model with MLM+NSP heads (bertrt init)")->required();
  c->add_option("--corpus", o->corpus,
                "training text files or folders (all *.txt inside, sorted), repeatable: one "
                "sentence or paragraph a line, a blank line between documents; streamed a shard "
                "at a time, epochs wrap around")
      ->required();
  CLI::Option* dupe = c->add_option("--dupe-factor", o->dupe_factor,
                "static masking: each shard's examples are made this many times with different "
                "masks and pairs, and repeat identically every epoch (create_pretraining_data.py)")
      ->capture_default_str();
  c->add_flag("--dynamic-masking", o->dynamic_masking,
              "fresh pairs and masks every epoch instead (RoBERTa; dupe factor 1)");
  c->add_option("--shard-documents", o->shard_documents,
                "documents read into memory at a time; examples are shuffled within a shard "
                "(enwiki, dupe factor 10, 128 tokens: ~19k examples, ~45 MB)")
      ->capture_default_str();
  c->add_option("--short-seq-prob", o->short_seq_prob,
                "share of documents given a shorter target length (NSP only)")
      ->capture_default_str();
  c->add_flag("--whole-word-mask", o->whole_word_mask,
              "mask all WordPieces of a word together (a word's ## pieces are chosen with it)");
  c->add_flag("--no-nsp", o->no_nsp,
              "RoBERTa FULL-SENTENCES: single segments packed with whole sentences up to "
              "--max-seq-length across document boundaries, no NSP loss");
  c->add_flag("--doc-sentences", o->doc_sentences,
              "with --no-nsp: do not cross document boundaries (RoBERTa DOC-SENTENCES)");
  c->add_option("--valid", o->valid, "held-out text (same layout): MLM/NSP accuracy before and after");
  c->add_option("--max-steps", o->max_steps, "optimizer steps")->required();
  c->add_option("--batch-size", o->batch_size, "sequences per optimizer step")->capture_default_str();
  c->add_option("--max-seq-length", o->max_seq_length, "tokens per sequence, [CLS]/[SEP] included")->capture_default_str();
  c->add_option("--max-predictions-per-seq", o->max_predictions, "at most this many masked positions a sequence")->capture_default_str();
  c->add_option("--masked-lm-prob", o->masked_lm_prob, "share of tokens chosen for MLM (80% [MASK], 10% random, 10% kept)")->capture_default_str();
  c->add_option("--learning-rate", o->lr, "peak AdamW learning rate")->capture_default_str();
  c->add_option("--warmup-ratio", o->warmup_ratio, "share of steps with linear warm-up")->capture_default_str();
  c->add_option("--weight-decay", o->weight_decay, "AdamW decay (not on LayerNorm/bias)")->capture_default_str();
  c->add_option("--valid-examples", o->valid_examples, "evaluate on at most this many held-out examples")
      ->capture_default_str();
  c->add_option("--seed", o->seed, "data order and masking")->capture_default_str();
  c->add_flag("--no-sentence-split", o->no_sentence_split,
              "treat each line as one sentence (default: split paragraph lines into sentences, "
              "which keeps NSP pairs 50/50 on paragraph-a-line corpora)");
  c->add_option("--metrics", o->metrics, "write JSON lines of step metrics to this file");
  c->add_option("-o,--output", o->out, "output model (.brt), written atomically")->required();
  o->backend.add_to(c);
  c->callback([o, dupe] {
    // Check everything cheap before the long work.
    check_output_path("-o", o->out);
    check_input_file("--model", o->model);
    const std::vector<std::string> corpus_files = expand_corpus_paths(o->corpus);
    if (o->dynamic_masking && dupe->count() > 0 && o->dupe_factor != 1)
      fail("--dynamic-masking makes fresh masks each epoch: --dupe-factor must be 1, got {}",
           o->dupe_factor);
    if (o->doc_sentences && !o->no_nsp) fail("--doc-sentences needs --no-nsp");
    if (!o->valid.empty()) check_input_file("--valid", o->valid);
    if (!o->metrics.empty()) check_output_path("--metrics", o->metrics);
    if (o->max_steps < 0) fail("--max-steps must be ≥ 0, got {}", o->max_steps);
    if (o->batch_size < 1) fail("--batch-size must be ≥ 1, got {}", o->batch_size);
    check_positive("--learning-rate", o->lr);
    check_positive("--weight-decay", o->weight_decay, /*allow_zero=*/true);
    LoadedModel m = load_model(o->model);
    BertModel& model = *m.model;
    const Tokenizer& tok = *m.tokenizer;
    if (!model.heads().mlm || (!o->no_nsp && !model.heads().nsp))
      fail("{}: pre-training needs the MLM{} head (start from `bertrt init`)", o->model,
           o->no_nsp ? "" : " and NSP");
    check_max_seq_length("--max-seq-length", o->max_seq_length,
                         model.config().max_position_embeddings);
    auto be = o->backend.make();
    MetricsLog metrics = o->metrics.empty() ? MetricsLog() : MetricsLog(o->metrics);
    PretrainingOptions popts;
    popts.max_seq_length = o->max_seq_length;
    popts.max_predictions_per_seq = o->max_predictions;
    popts.masked_lm_prob = o->masked_lm_prob;
    popts.seed = o->seed;
    popts.short_seq_prob = o->short_seq_prob;
    popts.nsp = !o->no_nsp;
    popts.cross_documents = !o->doc_sentences;
    popts.whole_word_mask = o->whole_word_mask;
    if (o->whole_word_mask) popts.continuation = wordpiece_continuations(tok.vocab());

    StreamOptions so;
    so.recipe = popts;
    so.batch_size = o->batch_size;
    so.dupe_factor = o->dynamic_masking ? 1 : o->dupe_factor;
    so.dynamic_masking = o->dynamic_masking;
    so.shard_documents = o->shard_documents;
    so.split_sentences = !o->no_sentence_split;
    PretrainingStream stream(
        corpus_files,
        [&tok](const std::string& line) { return tok.convert_tokens_to_ids(tok.tokenize(line)); },
        so, SpecialIds{tok.cls_id(), tok.sep_id(), tok.mask_id(), tok.pad_id(),
                       model.config().vocab_size});
    fmt::print("corpus: {} file(s); first shard: {} examples from {} lines ({}{}{})\n",
               corpus_files.size(), stream.stats().recipe.examples, stream.stats().corpus.lines,
               o->dynamic_masking ? "dynamic masking"
                                  : fmt::format("static masking, dupe factor {}", so.dupe_factor),
               o->whole_word_mask ? ", whole words" : "", o->no_nsp ? ", no NSP" : "");
    if (const CorpusStats& cs = stream.stats().corpus; cs.invalid_utf8_lines)
      fmt::print(stderr, "warning: {}: line {} holds invalid UTF-8 (and {} more lines in the first shard); those bytes are dropped\n",
                 cs.first_invalid_utf8_file, cs.first_invalid_utf8_line, cs.invalid_utf8_lines - 1);
    std::vector<PretrainingExample> valid;
    auto evaluate = [&](const char* when, int64_t step) {
      if (valid.empty()) return;
      const PretrainEval e = evaluate_pretraining(model, *be, valid, o->batch_size,
                                                  o->max_seq_length, tok.pad_id());
      fmt::print("valid {}: MLM accuracy {:.4f} (loss {:.3f}), NSP accuracy {:.4f} (loss {:.3f}) "
                 "on {} examples / {} masked tokens\n",
                 when, e.mlm_accuracy, e.mlm_loss, e.nsp_accuracy, e.nsp_loss, e.examples, e.masked);
      std::fflush(stdout);  // visible at once when piped (tee, logs)
      nlohmann::json j = eval_json(e);
      j["eval"] = when;
      j["step"] = step;
      metrics.write(j);
    };
    if (!o->valid.empty()) {
      const Documents valid_docs = load_corpus("--valid", o->valid, tok, !o->no_sentence_split);
      PretrainingOptions vopts = popts;
      vopts.seed = 987654321;  // a fixed held-out set, whatever the training seed
      std::mt19937_64 rng(vopts.seed);
      valid = create_pretraining_examples(valid_docs, vopts, tok.cls_id(), tok.sep_id(),
                                          tok.mask_id(), model.config().vocab_size, rng);
      if (o->valid_examples > 0 && valid.size() > size_t(o->valid_examples))
        valid.resize(o->valid_examples);
      size_t random_next = 0;
      for (const PretrainingExample& e : valid) random_next += e.next_sentence_label == 1;
      fmt::print("valid: {} examples, {:.1f}% with a random next segment (NSP label 1)\n",
                 valid.size(), 100.0 * random_next / std::max<size_t>(1, valid.size()));
      evaluate("before", 0);
    }

    OptimOptions oo;
    oo.learning_rate = o->lr;
    oo.total_steps = o->max_steps;
    oo.warmup_steps = warmup_steps_from_ratio(o->max_steps, o->warmup_ratio);
    oo.weight_decay = o->weight_decay;
    Trainer trainer(model, *be, oo);
    ProgressBar bar("pretrain", o->max_steps);
    pretrain(trainer, stream, o->max_steps, [&](const PretrainStepLog& log) {
      const ForwardResult& f = log.result.fwd;
      const double mlm_acc = f.mlm.count ? double(f.mlm.correct) / f.mlm.count : 0;
      const double nsp_acc = f.nsp.count ? double(f.nsp.correct) / f.nsp.count : 0;
      metrics.write({{"step", log.step}, {"epoch", log.epoch}, {"loss", f.loss},
                     {"mlm_loss", f.mlm.loss}, {"nsp_loss", f.nsp.loss},
                     {"mlm_accuracy", mlm_acc}, {"nsp_accuracy", nsp_acc},
                     {"learning_rate", log.result.learning_rate},
                     {"grad_norm", log.result.grad_norm},
                     {"tokens_per_second", log.tokens_per_second},
                     {"elapsed_seconds", log.elapsed_seconds}});
      bar.update(log.step, fmt::format("loss {:.3f} mlm {:.3f} nsp {:.3f} | {:.0f} tok/s", f.loss,
                                       f.mlm.loss, f.nsp.loss, log.tokens_per_second));
    });
    bar.finish();
    evaluate("after", o->max_steps);
    auto meta = m.metadata;
    meta["source"] = "bertrt pretrain";
    meta["pretrain_steps"] = std::to_string(o->max_steps);
    std::string corpus_list;
    for (const auto& p : o->corpus) corpus_list += (corpus_list.empty() ? "" : ",") + p;
    meta["pretrain_corpus"] = corpus_list;
    save_model(o->out, model, tok, meta);
    fmt::print("wrote {}\n", o->out);
  });
}

}  // namespace bertrt::cli
