// bertrt pretrain: MLM + NSP pre-training on a plain-text corpus (paper §3.1, A.2), resumable
// (--save-steps / --resume), crash-safe (atomic checkpoints) and observable (--metrics,
// --eval-steps). Flags are grouped: data, optimizer, memory, checkpoints, observability.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "common.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "interrupt.h"
#include "io/model_io.h"
#include "memory_flags.h"
#include "progress.h"
#include "train/checkpoint.h"
#include "train/instance_dump.h"
#include "train/metrics_log.h"
#include "train/pretrain.h"
#include "train/schedule.h"

namespace bertrt::cli {

namespace {

struct DataFlags {
  std::vector<std::string> corpus;  // files and folders
  std::string valid;
  int max_seq_length = 128, max_predictions = 20, valid_examples = 2000;
  float masked_lm_prob = 0.15f, short_seq_prob = 0.1f;
  uint64_t seed = 12345;
  int dupe_factor = 10;
  size_t shard_documents = 500;
  bool no_sentence_split = false, dynamic_masking = false, whole_word_mask = false, no_nsp = false,
       doc_sentences = false;
  CLI::Option* dupe_option = nullptr;  // to tell an explicit --dupe-factor from the default
};

struct OptimFlags {
  std::string optimizer = "adamw";
  float lr = 1e-4f, weight_decay = 0.01f, max_grad_norm = 1.0f;
  float beta1 = 0.9f, beta2 = 0.999f;
  std::optional<float> eps;  // default by optimizer: 1e-8 (adamw), 1e-6 (bert)
  std::optional<double> warmup_ratio;
  std::optional<int64_t> warmup_steps;
  int accumulation = 1;
};

struct Flags {
  std::string model, out, metrics, resume, dump_instances;
  int64_t max_steps = 0, save_steps = 0, eval_steps = 0;
  int batch_size = 32;
  bool skip_nonfinite = false, data_only = false;
  DataFlags data;
  OptimFlags optim;
  MemoryOptions memory;
  BackendChoice backend;
};

constexpr double kDefaultWarmupRatio = 0.01;

void add_data_flags(CLI::App* c, DataFlags& d) {
  c->add_option("--corpus", d.corpus,
                "training text files or folders (all *.txt inside, sorted), repeatable: one "
                "sentence or paragraph a line, a blank line between documents; streamed a shard "
                "at a time, epochs wrap around")
      ->required();
  d.dupe_option = c->add_option("--dupe-factor", d.dupe_factor,
                "static masking: each shard's examples are made this many times with different "
                "masks and pairs, and repeat identically every epoch (create_pretraining_data.py)")
      ->capture_default_str()
      ->check(at_least(1));
  c->add_flag("--dynamic-masking", d.dynamic_masking,
              "fresh pairs and masks every epoch instead (RoBERTa; dupe factor 1)");
  c->add_option("--shard-documents", d.shard_documents,
                "documents read into memory at a time; examples are shuffled within a shard "
                "(enwiki, dupe factor 10, 128 tokens: ~19k examples, ~45 MB)")
      ->capture_default_str()
      ->check(at_least(1));
  c->add_option("--short-seq-prob", d.short_seq_prob,
                "share of documents given a shorter target length (NSP only)")
      ->capture_default_str();
  c->add_flag("--whole-word-mask", d.whole_word_mask,
              "mask all WordPieces of a word together (a word's ## pieces are chosen with it)");
  c->add_flag("--no-nsp", d.no_nsp,
              "RoBERTa FULL-SENTENCES: single segments packed with whole sentences up to "
              "--max-seq-length across document boundaries, no NSP loss");
  c->add_flag("--doc-sentences", d.doc_sentences,
              "with --no-nsp: do not cross document boundaries (RoBERTa DOC-SENTENCES)");
  c->add_option("--valid", d.valid, "held-out text (same layout): MLM/NSP accuracy before, every "
                                    "--eval-steps and after");
  c->add_option("--max-seq-length", d.max_seq_length, "tokens per sequence, [CLS]/[SEP] included")->capture_default_str();
  c->add_option("--max-predictions-per-seq", d.max_predictions, "at most this many masked positions a sequence")->capture_default_str()
      ->check(at_least(1));
  c->add_option("--masked-lm-prob", d.masked_lm_prob, "share of tokens chosen for MLM (80% [MASK], 10% random, 10% kept)")->capture_default_str();
  c->add_option("--valid-examples", d.valid_examples,
                "evaluate on at most this many held-out examples (0: all)")
      ->capture_default_str()
      ->check(at_least(0));
  c->add_option("--seed", d.seed, "data order and masking")->capture_default_str()
      ->check(seed_value());
  c->add_flag("--no-sentence-split", d.no_sentence_split,
              "treat each line as one sentence (default: split paragraph lines into sentences, "
              "which keeps NSP pairs 50/50 on paragraph-a-line corpora)");
}

void add_optim_flags(CLI::App* c, OptimFlags& o) {
  c->add_option("--optimizer", o.optimizer,
                "adamw: torch.optim.AdamW + Hugging Face linear schedule + clip_grad_norm_; "
                "bert: the original (google-research/bert optimization.py): no bias correction, "
                "eps 1e-6, its schedule and tf.clip_by_global_norm")
      ->check(CLI::IsMember({"adamw", "bert"}))
      ->capture_default_str();
  c->add_option("--learning-rate", o.lr, "peak learning rate")->capture_default_str();
  auto* ratio = c->add_option("--warmup-ratio", o.warmup_ratio,
                              "share of steps with linear warm-up (default 0.01)");
  auto* steps = c->add_option("--warmup-steps", o.warmup_steps, "steps of linear warm-up");
  ratio->excludes(steps);
  steps->excludes(ratio);
  c->add_option("--weight-decay", o.weight_decay, "decoupled weight decay (not on LayerNorm/bias)")->capture_default_str();
  c->add_option("--max-grad-norm", o.max_grad_norm, "global gradient-norm clipping; 0 disables")->capture_default_str();
  c->add_option("--adam-beta1", o.beta1, "Adam β1")->capture_default_str();
  c->add_option("--adam-beta2", o.beta2, "Adam β2")->capture_default_str();
  c->add_option("--adam-epsilon", o.eps, "Adam ε (default 1e-8 for adamw, 1e-6 for bert)");
  c->add_option("--gradient-accumulation-steps", o.accumulation,
                "split each --batch-size batch into this many micro-batches (less memory, same "
                "data); each micro-batch loss is scaled by 1/K as in Hugging Face Trainer")
      ->capture_default_str();
}

void validate(const Flags& o) {
  if (o.data_only) {
    if (o.dump_instances.empty())
      fail_usage("--data-only needs --dump-instances (the file it writes)");
    if (!o.out.empty())
      fmt::print(stderr, "bertrt: note: --data-only trains nothing: -o {} is not written\n", o.out);
  } else {
    check_output_path("-o", o.out);
  }
  if (o.model.empty() == o.resume.empty())
    fail_usage("give exactly one of --model (start a run) and --resume (continue one)");
  if (!o.model.empty()) check_input_file("--model", o.model);
  if (!o.resume.empty()) check_input_file("--resume", o.resume);
  const DataFlags& d = o.data;
  if (d.dynamic_masking && d.dupe_option && d.dupe_option->count() > 0 && d.dupe_factor != 1)
    fail_usage("--dynamic-masking makes fresh masks each epoch: --dupe-factor must be 1, got {}",
               d.dupe_factor);
  if (d.doc_sentences && !d.no_nsp) fail_usage("--doc-sentences needs --no-nsp");
  for (const auto& [flag, p] : {std::pair{"--masked-lm-prob", d.masked_lm_prob},
                                std::pair{"--short-seq-prob", d.short_seq_prob}})
    if (!(p >= 0 && p <= 1)) fail_usage("{} must be in [0, 1], got {}", flag, p);
  if (!d.valid.empty()) check_input_file("--valid", d.valid);
  if (!o.metrics.empty()) check_output_path("--metrics", o.metrics);
  if (!o.dump_instances.empty()) check_output_path("--dump-instances", o.dump_instances);
  {
    FlagPaths data{{"--valid", d.valid}};
    for (const std::string& c : d.corpus) {
      data.push_back({"--corpus", c});
      // A folder's .txt files are read too: an output among them would replace training text.
      std::error_code ec;
      if (std::filesystem::is_directory(c, ec))
        for (const auto& e : std::filesystem::directory_iterator(c, ec))
          if (e.path().extension() == ".txt")
            data.push_back({fmt::format("a file of --corpus {}", c), e.path().string()});
    }
    const FlagPaths logs{{"--metrics", o.metrics}, {"--dump-instances", o.dump_instances}};
    FlagPaths outputs = logs;
    if (!o.data_only) {
      outputs.push_back({"-o", o.out});
      outputs.push_back({"-o's checkpoint", resume_path(o.out)});
    }
    check_distinct_files(outputs, data);
    // Nor may -o replace the model the run starts from.
    FlagPaths model_outputs = logs;
    if (!o.data_only) model_outputs.push_back({"-o", o.out});
    check_distinct_files(model_outputs, {{"--model", o.model}, {"--resume", o.resume}});
    // Nor a new .txt file there: the next run over the folder would read it as training text
    // (and a resumed run would meet another corpus).
    for (const auto& [flag, path] : outputs) {
      if (path.empty() || std::filesystem::path(path).extension() != ".txt") continue;
      std::filesystem::path folder = std::filesystem::path(path).parent_path();
      if (folder.empty()) folder = ".";
      for (const std::string& c : d.corpus) {
        std::error_code ec;
        if (std::filesystem::is_directory(c, ec) && std::filesystem::equivalent(folder, c, ec))
          fail(
              "{} {}: a .txt file in --corpus folder {}: a run over that folder would read "
              "it as training text; write it elsewhere",
              flag, path, c);
      }
    }
  }
  if (o.max_steps < 0) fail_usage("--max-steps must be ≥ 0, got {}", o.max_steps);
  if (o.eval_steps > 0 && d.valid.empty())
    fail_usage("--eval-steps {} needs --valid (the held-out text to evaluate on)", o.eval_steps);
  const OptimFlags& p = o.optim;
  check_positive("--learning-rate", p.lr);
  check_positive("--weight-decay", p.weight_decay, /*allow_zero=*/true);
  check_positive("--max-grad-norm", p.max_grad_norm, /*allow_zero=*/true);
  if (p.warmup_ratio && !(*p.warmup_ratio >= 0 && *p.warmup_ratio <= 1))
    fail_usage("--warmup-ratio must be in [0, 1], got {}", *p.warmup_ratio);
  if (!(p.beta1 >= 0 && p.beta1 < 1)) fail_usage("--adam-beta1 must be in [0, 1), got {}", p.beta1);
  if (!(p.beta2 >= 0 && p.beta2 < 1)) fail_usage("--adam-beta2 must be in [0, 1), got {}", p.beta2);
  if (p.eps) check_positive("--adam-epsilon", *p.eps);
  if (p.warmup_steps && *p.warmup_steps < 0)
    fail_usage("--warmup-steps must be ≥ 0, got {}", *p.warmup_steps);
  if (p.accumulation < 1)
    fail_usage("--gradient-accumulation-steps must be ≥ 1, got {}", p.accumulation);
  if (o.batch_size % p.accumulation != 0)
    fail_usage("--batch-size {} is not a multiple of --gradient-accumulation-steps {}",
               o.batch_size, p.accumulation);
  check_memory_options(o.memory);
}

OptimOptions optim_options(const Flags& o) {
  const OptimFlags& p = o.optim;
  OptimOptions oo;
  oo.optimizer = parse_optimizer(p.optimizer);
  oo.learning_rate = p.lr;
  oo.total_steps = o.max_steps;
  oo.warmup_steps = p.warmup_steps ? *p.warmup_steps
                                   : warmup_steps_from_ratio(o.max_steps, p.warmup_ratio.value_or(kDefaultWarmupRatio));
  oo.weight_decay = p.weight_decay;
  oo.max_grad_norm = p.max_grad_norm;
  oo.beta1 = p.beta1, oo.beta2 = p.beta2;
  oo.eps = p.eps.value_or(oo.optimizer == OptimizerKind::kBert ? 1e-6f : 1e-8f);
  oo.gradient_accumulation_steps = p.accumulation;
  oo.skip_nonfinite = o.skip_nonfinite;
  oo.skip_nonfinite_flag = "--skip-nonfinite";
  return oo;
}

// The flags whose change would make a resumed run differ from the uninterrupted one, as strings
// (exact comparison). Not here: --recompute (same bits), --skip-nonfinite, --backend (numerics
// differ by rounding, a warning), and everything about output, evaluation and logging.
nlohmann::json run_signature(const Flags& o, const OptimOptions& oo,
                             const std::vector<std::string>& corpus_files) {
  auto s = [](auto v) { return fmt::format("{}", v); };
  std::vector<std::string> files;  // names and sizes (the stream state checks them too)
  for (const std::string& f : corpus_files) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(f, ec);
    files.push_back(fmt::format("{} ({} bytes)", std::filesystem::path(f).filename().string(),
                                ec ? 0 : bytes));
  }
  const DataFlags& d = o.data;
  return {
      // data
      {"--corpus", fmt::format("{}", fmt::join(files, ", "))},
      {"--max-seq-length", s(d.max_seq_length)},
      {"--max-predictions-per-seq", s(d.max_predictions)},
      {"--masked-lm-prob", s(d.masked_lm_prob)},
      {"--short-seq-prob", s(d.short_seq_prob)},
      {"--seed", s(d.seed)},
      {"--no-sentence-split", s(d.no_sentence_split)},
      {"--dupe-factor", s(d.dynamic_masking ? 1 : d.dupe_factor)},
      {"--dynamic-masking", s(d.dynamic_masking)},
      {"--shard-documents", s(d.shard_documents)},
      {"--whole-word-mask", s(d.whole_word_mask)},
      {"--no-nsp", s(d.no_nsp)},
      {"--doc-sentences", s(d.doc_sentences)},
      {"--batch-size", s(o.batch_size)},
      // optimizer and schedule
      {"--max-steps", s(o.max_steps)},
      {"--optimizer", o.optim.optimizer},
      {"--learning-rate", s(oo.learning_rate)},
      {"--warmup-steps", s(oo.warmup_steps)},
      {"--weight-decay", s(oo.weight_decay)},
      {"--max-grad-norm", s(oo.max_grad_norm)},
      {"--adam-beta1", s(oo.beta1)},
      {"--adam-beta2", s(oo.beta2)},
      {"--adam-epsilon", s(oo.eps)},
      {"--gradient-accumulation-steps", s(oo.gradient_accumulation_steps)},
      // memory options that change what is trained
      {"--freeze-embeddings", s(o.memory.freeze_embeddings)},
      {"--freeze-layers", s(o.memory.freeze_layers)},
  };
}

constexpr const char* kRunKey = "pretrain_run";
constexpr const char* kBackendKey = "pretrain_backend";

// Refuses a checkpoint written with other flags, naming each.
void check_resumable(const std::string& path, const LoadedModel& m, const nlohmann::json& now,
                     const std::string& backend) {
  if (!m.training_state)
    fail("--resume {}: the file has no training state (written by `bertrt init`, finetune or "
         "convert?){}", path, resume_hint(path));
  auto it = m.metadata.find(kRunKey);
  if (it == m.metadata.end())
    fail("--resume {}: the file lacks the '{}' record of a `bertrt pretrain` checkpoint", path,
         kRunKey);
  const nlohmann::json then = nlohmann::json::parse(it->second, nullptr, false);
  if (then.is_discarded()) fail("--resume {}: the '{}' record is not JSON", path, kRunKey);
  std::vector<std::string> diff;
  for (const auto& [flag, value] : now.items()) {
    const std::string was = then.contains(flag) ? then[flag].get<std::string>() : "(absent)";
    if (was != value.get<std::string>())
      diff.push_back(fmt::format("{} (checkpoint {}, now {})", flag, was, value.get<std::string>()));
  }
  if (!diff.empty())
    fail("--resume {}: these flags differ from the run that wrote it, so it would not continue "
         "exactly: {}", path, fmt::join(diff, ", "));
  auto be = m.metadata.find(kBackendKey);
  if (be != m.metadata.end() && be->second != backend)
    fmt::print(stderr, "bertrt: warning: --resume {}: written with --backend {}, now {}; the run continues "
               "but not bit-identically\n", path, be->second, backend);
}

// Without NSP (--no-nsp) the NSP keys are left out: zeros would plot as flat curves.
nlohmann::json eval_json(const PretrainEval& e, bool nsp) {
  nlohmann::json j = {{"mlm_loss", e.mlm_loss}, {"mlm_accuracy", e.mlm_accuracy}};
  if (nsp) j["nsp_loss"] = e.nsp_loss, j["nsp_accuracy"] = e.nsp_accuracy;
  j["examples"] = e.examples;
  j["masked_tokens"] = e.masked;
  return j;
}

nlohmann::json step_json(const PretrainStepLog& log, int64_t skipped_steps, bool nsp) {
  const ForwardResult& f = log.result.fwd;
  const double mlm_acc = f.mlm.count ? double(f.mlm.correct) / f.mlm.count : 0;
  const double nsp_acc = f.nsp.count ? double(f.nsp.correct) / f.nsp.count : 0;
  nlohmann::json j = {{"step", log.step},
                      {"epoch", log.epoch},
                      {"loss", f.loss},
                      {"mlm_loss", f.mlm.loss},
                      {"mlm_accuracy", mlm_acc},
                      {"learning_rate", log.result.learning_rate},
                      {"grad_norm", log.result.grad_norm},  // NaN/inf are written as null
                      {"tokens_per_second", log.tokens_per_second},
                      {"elapsed_seconds", log.elapsed_seconds},
                      {"skipped_steps", skipped_steps}};
  if (nsp) j["nsp_loss"] = f.nsp.loss, j["nsp_accuracy"] = nsp_acc;
  if (log.result.skipped) j["skipped"] = true;
  return j;
}

Documents load_corpus(const std::string& flag, const std::string& path, const Tokenizer& tok,
                      bool split_sentences, bool nsp) {
  ProgressBar bar("reading " + flag, 1000);
  CorpusOptions co;
  co.min_documents = nsp ? 2 : 1;  // NSP's random next segment comes from another document
  co.split_sentences = split_sentences;
  co.progress = [&bar](size_t done, size_t total) {
    if (total) bar.update(int64_t(done * 1000 / total), fmt::format("{:.1f} MB", done / 1e6));
  };
  CorpusStats stats;
  Documents docs;
  try {
    docs = read_corpus(path, tok, co, &stats);
  } catch (const Error& e) {
    fail("{} {}", flag, e.what());  // which of --corpus and --valid
  }
  bar.finish(fmt::format("{} documents, {} lines, {:.2f} M tokens", stats.documents, stats.lines,
                         stats.tokens / 1e6));
  if (stats.invalid_utf8_lines)
    fmt::print(stderr, "bertrt: warning: {}: {} lines hold invalid UTF-8 (first: line {}); those bytes were dropped\n",
               path, stats.invalid_utf8_lines, stats.first_invalid_utf8_line);
  return docs;
}

PretrainingOptions pretraining_options(const DataFlags& d, const Tokenizer& tok) {
  PretrainingOptions p;
  p.max_seq_length = d.max_seq_length;
  p.max_predictions_per_seq = d.max_predictions;
  p.masked_lm_prob = d.masked_lm_prob;
  p.seed = d.seed;
  p.short_seq_prob = d.short_seq_prob;
  p.nsp = !d.no_nsp;
  p.cross_documents = !d.doc_sentences;
  p.whole_word_mask = d.whole_word_mask;
  if (d.whole_word_mask) p.continuation = wordpiece_continuations(tok.vocab());
  return p;
}

// The training stream over the corpus files, a shard at a time (train/pretraining_stream.h).
PretrainingStream make_stream(const Flags& o, const std::vector<std::string>& files,
                              const Tokenizer& tok, int vocab_size) {
  const DataFlags& d = o.data;
  StreamOptions so;
  so.recipe = pretraining_options(d, tok);
  so.batch_size = o.batch_size;
  so.dupe_factor = d.dynamic_masking ? 1 : d.dupe_factor;
  so.dynamic_masking = d.dynamic_masking;
  so.shard_documents = d.shard_documents;
  so.split_sentences = !d.no_sentence_split;
  PretrainingStream stream(
      files,
      [&tok](const std::string& line) { return tok.convert_tokens_to_ids(tok.tokenize(line)); },
      so, SpecialIds{tok.cls_id(), tok.sep_id(), tok.mask_id(), tok.pad_id(), vocab_size});
  fmt::print("corpus: {} file(s); first shard: {} examples from {} lines ({}{}{})\n",
             files.size(), stream.stats().recipe.examples, stream.stats().corpus.lines,
             d.dynamic_masking ? "dynamic masking"
                               : fmt::format("static masking, dupe factor {}", so.dupe_factor),
             d.whole_word_mask ? ", whole words" : "", d.no_nsp ? ", no NSP" : "");
  if (const CorpusStats& cs = stream.stats().corpus; cs.invalid_utf8_lines)
    fmt::print(stderr, "bertrt: warning: {}: line {} holds invalid UTF-8 (and {} more lines in the first "
               "shard); those bytes are dropped\n",
               cs.first_invalid_utf8_file, cs.first_invalid_utf8_line, cs.invalid_utf8_lines - 1);
  return stream;
}

// The held-out examples: a fixed set whatever the training seed.
std::vector<PretrainingExample> validation_examples(const Flags& o, const Tokenizer& tok,
                                                    int vocab_size) {
  const Documents docs = load_corpus("--valid", o.data.valid, tok, !o.data.no_sentence_split, !o.data.no_nsp);
  PretrainingOptions vopts = pretraining_options(o.data, tok);
  vopts.seed = 987654321;
  std::mt19937_64 rng(vopts.seed);
  std::vector<PretrainingExample> valid = create_pretraining_examples(
      docs, vopts, tok.cls_id(), tok.sep_id(), tok.mask_id(), vocab_size, rng);
  if (o.data.valid_examples > 0 && valid.size() > size_t(o.data.valid_examples))
    valid.resize(o.data.valid_examples);
  size_t random_next = 0;
  for (const PretrainingExample& e : valid) random_next += e.next_sentence_label == 1;
  if (o.data.no_nsp)
    fmt::print("valid: {} examples\n", valid.size());
  else
    fmt::print("valid: {} examples, {:.1f}% with a random next segment (NSP label 1)\n",
               valid.size(), 100.0 * random_next / std::max<size_t>(1, valid.size()));
  return valid;
}

// AtomicFile's temp files (<target>.tmp.XXXXXX, beside the file `out` names through its links) of
// writers killed mid-save: harmless (never the checkpoint), but as large as a checkpoint, so they
// are named for the user to delete.
void warn_stale_temp_files(const std::string& out) {
  namespace fs = std::filesystem;
  const fs::path p(output_target(out));  // (check_output_path has refused a loop)
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string prefix = p.filename().string() + ".tmp.";
  std::vector<std::string> names;
  uintmax_t bytes = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    names.push_back(e.path().string());
    bytes += e.is_regular_file(ec) ? e.file_size(ec) : 0;
  }
  if (!names.empty())
    fmt::print(stderr, "bertrt: warning: {} temp file(s) ({:.1f} MB) were left by a killed run writing {}; "
               "they are not checkpoints and can be deleted: {}\n", names.size(), bytes / 1e6, out,
               fmt::join(names, " "));
}

void run(const Flags& o) {
  validate(o);
  catch_stop_signals();
  const std::vector<std::string> corpus_files = expand_corpus_paths(o.data.corpus);
  if (!o.data_only) {
    warn_stale_temp_files(o.out);
    warn_stale_temp_files(resume_path(o.out));
  }
  const bool resuming = !o.resume.empty();
  const std::string& model_path = resuming ? o.resume : o.model;
  const OptimOptions oo = optim_options(o);
  const nlohmann::json signature = run_signature(o, oo, corpus_files);
  std::unique_ptr<BertModel> model_owner;
  std::unique_ptr<Tokenizer> tok_owner;
  std::map<std::string, std::string> loaded_metadata;
  std::unique_ptr<Backend> be;
  std::optional<PretrainingStream> stream_owner;
  std::unique_ptr<Trainer> trainer_owner;
  {  // The file stays mapped only while loading: its pages would count in the resident memory.
    LoadOptions load;
    load.training_state = resuming;  // only a resumed run reads the optimizer moments
    LoadedModel m = load_model(model_path, load);
    if (!m.model->heads().mlm || (!o.data.no_nsp && !m.model->heads().nsp))
      fail("{}: pre-training needs the MLM{} head (start from `bertrt init`)", model_path,
           o.data.no_nsp ? "" : " and NSP");
    check_max_seq_length("--max-seq-length", o.data.max_seq_length,
                         m.model->config().max_position_embeddings);
    if (resuming) check_resumable(o.resume, m, signature, o.backend.name);
    be = o.backend.make();
    model_owner = std::move(m.model);
    tok_owner = std::move(m.tokenizer);
    loaded_metadata = m.metadata;
    stream_owner.emplace(make_stream(o, corpus_files, *tok_owner, model_owner->config().vocab_size));
    trainer_owner = std::make_unique<Trainer>(*model_owner, *be, oo, o.memory);
    if (resuming) {
      stream_owner->restore_state(m.training_state->rng_state);
      restore_training_state(*trainer_owner, *m.training_state, o.resume);  // copies the moments
      m.file.release_optimizer_pages();  // the model may keep the mapping: not these pages
      fmt::print("resuming {} at step {} of {}\n", o.resume, trainer_owner->steps_done(),
                 o.max_steps);
    }
  }
  BertModel& model = *model_owner;
  const Tokenizer& tok = *tok_owner;
  PretrainingStream& stream = *stream_owner;
  Trainer& trainer = *trainer_owner;
  MetricsLog metrics = o.metrics.empty() ? MetricsLog()
                       : resuming        ? MetricsLog(o.metrics, trainer.steps_done())
                                         : MetricsLog(o.metrics);

  const bool nsp = !o.data.no_nsp;
  std::vector<PretrainingExample> valid;
  auto evaluate = [&](const char* when, int64_t step) -> double {
    if (valid.empty()) return 0.0;
    const PretrainEval e = evaluate_pretraining(model, *be, valid, o.batch_size,
                                                o.data.max_seq_length, tok.pad_id());
    if (step == 0 && stop_signal()) return e.mlm_loss;  // stopped before training: not reported
    fmt::print(
        "valid {} (step {}): MLM accuracy {:.4f} (loss {:.3f}){} on {} examples / {} "
        "masked tokens\n",
        when, step, e.mlm_accuracy, e.mlm_loss,
        nsp ? fmt::format(", NSP accuracy {:.4f} (loss {:.3f})", e.nsp_accuracy, e.nsp_loss) : "",
        e.examples, e.masked);
    std::fflush(stdout);  // visible at once when piped (tee, logs)
    metrics.write({{"step", step}, {"eval", eval_json(e, nsp)}});
    return e.mlm_loss;
  };
  if (!o.data.valid.empty() && !o.data_only) {
    valid = validation_examples(o, tok, model.config().vocab_size);
    if (!resuming && !stop_signal()) evaluate("before", 0);
  }

  auto meta = loaded_metadata;
  meta["source"] = "bertrt pretrain";
  meta["pretrain_corpus"] = fmt::format("{}", fmt::join(o.data.corpus, ","));
  meta[kRunKey] = signature.dump();
  meta[kBackendKey] = o.backend.name;
  // The resumable checkpoints (--save-steps, a signal) go to OUT.resume, the finished run to -o.
  const std::string ckpt = resume_path(o.out);
  // The step ckpt holds: the resumed checkpoint's when it is ckpt (the usual --resume OUT.resume).
  std::error_code same_ec;
  int64_t last_saved =
      resuming && std::filesystem::equivalent(o.resume, ckpt, same_ec) ? trainer.steps_done() : -1;
  auto save_to = [&](const std::string& path) {
    meta["pretrain_steps"] = std::to_string(trainer.steps_done());
    const uint64_t consumed = uint64_t(trainer.steps_done()) * uint64_t(o.batch_size);
    save_model(path, model, tok, meta, capture_training_state(trainer, stream.save_state(), consumed));
  };
  auto save = [&]() {
    save_to(ckpt);
    last_saved = trainer.steps_done();
  };

  std::optional<InstanceDump> dump;
  const int64_t first_step = trainer.steps_done() + 1;
  // A resumed run's dump continues the interrupted run's (its steps up to the checkpoint first).
  auto commit_dump = [&] {
    if (!dump) return;
    dump->commit();
    if (dump->first_step() == 0)
      fmt::print("wrote {} (no steps)\n", o.dump_instances);
    else
      fmt::print("wrote {} (steps {}..{})\n", o.dump_instances, dump->first_step(),
                 trainer.steps_done());
  };
  if (!o.dump_instances.empty())
    dump.emplace(o.dump_instances, o.data.max_seq_length, o.batch_size / o.optim.accumulation,
                 o.optim.accumulation, resuming ? trainer.steps_done() : 0);
  MicroBatchFn on_micro_batch;
  if (dump)
    on_micro_batch = [&dump](int64_t step, int micro, int, const Batch& b) {
      dump->write(step, micro, b);
    };
  if (o.data_only) {  // the same stream and slicing as training, without the steps
    // A signal stops before the next step's first micro-batch: the dump keeps whole steps.
    struct Stopped {
      int64_t step;
    };
    try {
      stream_micro_batches(stream, trainer.steps_done() + 1, o.max_steps, o.optim.accumulation,
                           [&](int64_t step, int micro, int k, const Batch& b) {
                             if (micro == 0 && stop_signal()) throw Stopped{step};
                             on_micro_batch(step, micro, k, b);
                           });
    } catch (const Stopped& s) {
      const int sig = stop_signal();
      if (s.step == first_step)  // no whole step: an existing file stays as it was
        throw Interrupted(sig,
                          fmt::format("{} before step {} of {}: {} not written", signal_name(sig),
                                      first_step, o.max_steps, o.dump_instances));
      dump->commit();
      throw Interrupted(
          sig,
          fmt::format("{} at step {} of {}: wrote {} (steps {}..{}, no training)", signal_name(sig),
                      s.step - 1, o.max_steps, o.dump_instances, first_step, s.step - 1));
    }
    dump->commit();
    fmt::print("wrote {} (steps {}..{}, no training)\n", o.dump_instances, trainer.steps_done() + 1,
               o.max_steps);
    return;
  }

  // A signal while loading (a large first shard takes a while): no step ran, so nothing to save.
  if (const int sig = stop_signal())
    throw Interrupted(sig, fmt::format("{} before step {} of {}: nothing trained, {} not written",
                                       signal_name(sig), first_step, o.max_steps, o.out));
  ProgressBar bar("pretrain", o.max_steps);
  // A step skipped on its loss leaves the weights that gave it: they are not saved (a checkpoint
  // of them would be offered for --resume). last_applied: the last step that changed them.
  bool last_loss_nonfinite = false;
  int64_t last_applied = trainer.steps_done();
  // Whether -o's checkpoint holds the current weights (no update after it).
  const auto saved_is_current = [&] { return last_saved >= 0 && last_saved >= last_applied; };
  try {
    pretrain(
        trainer, stream, o.max_steps,
        [&](const PretrainStepLog& log) {
          last_loss_nonfinite = log.result.skipped && !std::isfinite(log.result.fwd.loss);
          if (!log.result.skipped) last_applied = log.step;
          metrics.write(step_json(log, trainer.skipped_steps(), nsp));
          const ForwardResult& f = log.result.fwd;
          bar.update(
              log.step,
              fmt::format("loss {:.3f} mlm {:.3f}{} | {:.0f} tok/s{}", f.loss, f.mlm.loss,
                          nsp ? fmt::format(" nsp {:.3f}", f.nsp.loss) : "", log.tokens_per_second,
                          trainer.skipped_steps()
                              ? fmt::format(" | {} skipped", trainer.skipped_steps())
                              : ""));
          if (o.eval_steps > 0 && log.step % o.eval_steps == 0 && log.step != o.max_steps)
            evaluate("periodic", log.step);
          if (o.save_steps > 0 && log.step % o.save_steps == 0 && log.step != o.max_steps &&
              !last_loss_nonfinite)
            save();
          // SIGINT/SIGTERM (interrupt.h): a checkpoint of this step, then out. At the last step
          // the run finishes instead: its final save is the same file.
          if (const int sig = stop_signal(); sig && log.step != o.max_steps) {
            if (last_saved != log.step && !last_loss_nonfinite) save();
            bar.stop(log.step, signal_name(sig));
            commit_dump();
            if (last_saved != log.step)
              throw Interrupted(
                  sig,
                  fmt::format(
                      "{} at step {} of {}: its weights give a non-finite loss, so "
                      "no checkpoint of them was written{}",
                      signal_name(sig), log.step, o.max_steps,
                      last_saved >= 0 ? fmt::format("; {} keeps step {}", ckpt, last_saved) : ""));
            throw Interrupted(
                sig,
                fmt::format("{} at step {} of {}: wrote the resumable checkpoint {} (continue "
                            "with --resume {} in place of --model, the other flags the same; {} is written when the run "
                            "finishes)",
                            signal_name(sig), log.step, o.max_steps, ckpt, ckpt, o.out));
          }
        },
        on_micro_batch);
  } catch (const NonFiniteError& e) {
    // The same flags meet the same step again: --resume is no way on. The checkpoint holds
    // either these weights (which gave this) or earlier ones a new run may start from.
    if (last_saved < 0) fail("{}\nno checkpoint was written (see --save-steps)", e.what());
    fail("{}\n{} keeps the checkpoint of step {}{}", e.what(), ckpt, last_saved,
         saved_is_current() && e.from_weights
             ? ", which holds the weights that gave this: start again from an earlier model"
             : fmt::format(" (--resume would meet this step again; a new run may start from it "
                           "with --model {} and other flags)",
                           ckpt));
  } catch (const Error& e) {
    if (last_saved >= 0)
      fail("{}\n{} keeps the checkpoint of step {} (continue with --resume {})", e.what(), ckpt,
           last_saved, ckpt);
    fail("{}\nno checkpoint was written (see --save-steps)", e.what());
  }
  bar.finish(trainer.skipped_steps() ? fmt::format("{} steps skipped (non-finite)", trainer.skipped_steps()) : "");
  // With --skip-nonfinite a run can end on finite but useless weights (every step from some
  // point skipped). A skipped step leaves the weights as they are, so a last step skipped on its
  // loss shows that the final model computes a non-finite loss; so does a held-out loss. Such a
  // model is not written over -o.
  const double held_out = evaluate("after", trainer.steps_done());
  if (last_loss_nonfinite || !std::isfinite(held_out))
    fail(
        "{}: the model no longer computes finite outputs ({} of {} steps skipped), so {} was "
        "not written{} — lower --learning-rate",
        last_loss_nonfinite
            ? fmt::format("the final weights' loss is not finite (step {} was skipped on it)",
                          trainer.steps_done())
            : fmt::format("the held-out MLM loss after step {} is not finite",
                          trainer.steps_done()),
        trainer.skipped_steps(), trainer.steps_done(), o.out,
        last_saved < 0       ? ""
        : saved_is_current() ? fmt::format(" ({} keeps the checkpoint of step {}, which holds "
                                           "these same weights: no update was applied after it)",
                                           ckpt, last_saved)
                             : fmt::format(" ({} keeps the checkpoint of step {})", ckpt,
                                           last_saved));
  commit_dump();
  save_to(o.out);
  remove_resume_checkpoint(o.out);  // an older step of this run
  fmt::print("wrote {}\n", o.out);
}

}  // namespace

void add_pretrain(CLI::App& app) {
  auto o = std::make_shared<Flags>();
  CLI::App* c = app.add_subcommand("pretrain", "MLM + NSP pre-training on a plain-text corpus");
  c->footer(
      "Checkpoints: -o OUT is written when the run finishes (the model with its training state).\n"
      "The resumable checkpoint OUT.resume (model + optimizer moments + data position) is written\n"
      "every --save-steps steps and when SIGINT/SIGTERM stops the run (the step in progress\n"
      "finishes; exit 130/143); the finished run removes it. Continue with --resume OUT.resume\n"
      "in place of --model, the other flags the same: the result is byte-identical to an\n"
      "uninterrupted run.");
  c->add_option("--model", o->model, "initial model with MLM+NSP heads (bertrt init); or --resume");
  c->add_option("--resume", o->resume,
                "continue the run that wrote this checkpoint (OUT.resume, beside its -o OUT), "
                "in place of --model; the other flags the same");
  c->add_option("--max-steps", o->max_steps, "optimizer steps")->required()->check(at_least(1));
  c->add_option("--batch-size", o->batch_size, "sequences per optimizer step")->capture_default_str()
      ->check(at_least(1));
  add_data_flags(c, o->data);
  add_optim_flags(c, o->optim);
  add_memory_flags(c, o->memory, /*pretraining=*/true);
  c->add_flag("--skip-nonfinite", o->skip_nonfinite,
              "skip (no update, counted in metrics) a step whose loss or gradient is non-finite "
              "instead of stopping the run");
  c->add_option("--save-steps", o->save_steps,
                "write the resumable checkpoint OUT.resume (model + full training state, "
                "atomically) every N steps; 0: only when stopped by SIGINT/SIGTERM")
      ->capture_default_str()
      ->check(at_least(0));
  c->add_option("--eval-steps", o->eval_steps, "evaluate on --valid every N steps; 0: before and after only")
      ->capture_default_str()
      ->check(at_least(0));
  c->add_option("--metrics", o->metrics, "write JSON lines of step and eval metrics to this file");
  c->add_option(
      "--dump-instances", o->dump_instances,
      "write the exact micro-batches trained on, for another implementation to train on the "
      "same data: a binary file (header \"BRTINST1\", then per micro-batch its step, the "
      "input_ids, token_type_ids, attention_mask, masked positions and their ids, NSP labels, "
      "little-endian int32; numpy reads it); written when the run ends or is interrupted (its "
      "steps named), the run unchanged");
  c->add_flag("--data-only", o->data_only,
              "with --dump-instances: write the batches of --max-steps steps and stop, without "
              "training (for data statistics); -o is then not needed");
  c->add_option("-o,--output", o->out,
                "output model OUT (.brt) with its training state, written atomically when the run "
                "finishes (required but with --data-only); checkpoints go to OUT.resume");
  o->backend.add_to(c);
  c->callback([o] { run(*o); });
}

}  // namespace bertrt::cli
