// bertrt finetune: one pre-trained encoder, a fresh task head on top, all weights trained (paper
// §4): sentence(-pair) classification and regression (GLUE presets, generic TSV), token tagging
// (CoNLL-2003) and span extraction (SQuAD v1.1). Dev metrics after every epoch and at the end.
// The task (head kind, labels, data format) is stored in the output model, so `bertrt eval` and
// `bertrt predict` need only --model.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common.h"
#include "finetune_embeddings.h"
#include "finetune_reranker.h"
#include "core/error.h"
#include "interrupt.h"
#include "io/adapter_io.h"
#include "io/model_io.h"
#include "lora_flags.h"
#include "memory_flags.h"
#include "progress.h"
#include "qat_flags.h"
#include "task_flags.h"
#include "train/checkpoint.h"
#include "train/finetune.h"
#include "train/finetune_setup.h"
#include "train/metrics_log.h"
#include "train/metrics_report.h"
#include "train/schedule.h"

namespace bertrt::cli {

namespace {

// The flags that decide the batches and updates of a run, stored in a resumable checkpoint
// (interrupted by SIGINT/SIGTERM) so --resume refuses a run that would not continue it.
constexpr const char* kRunKey = "finetune_run";

// The flag behind a key of the run record (the record keeps the keys older checkpoints have).
std::string run_flag(const std::string& key) {
  if (key == "train_bytes") return "--train's size in bytes";
  if (key == "total_steps") return "total steps (--epochs / --max-steps)";
  std::string flag = "--" + key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// The flag behind a key of a task record's "tsv" or "squad" group (the others are spelled as
// run_flag spells them).
std::string task_flag(const std::string& key) {
  if (key == "has_header") return "--no-header";
  return run_flag(key);
}

// A record value as the flag was written: floats as their float's shortest decimal. The keys
// written only when set (below) are absent at their flag's default: that default.
std::string run_value(const std::string& key, const nlohmann::json* v) {
  if (!v) {
    if (key == "hidden_dropout_prob" || key == "attention_probs_dropout_prob" ||
        key == "freeze_layers")
      return "0";
    if (key == "freeze_embeddings") return "off";
    return "(not given)";
  }
  if (v->is_boolean())
    return v->get<bool>() != (key == "has_header") ? "on" : "off";  // --no-header
  if (v->is_array()) {                                              // --labels a,b,c
    std::vector<std::string> items;
    for (const auto& x : *v) items.push_back(x.is_string() ? x.get<std::string>() : x.dump());
    return fmt::format("{}", fmt::join(items, ","));
  }
  if (v->is_number_float()) return fmt::format("{}", static_cast<float>(v->get<double>()));
  if (v->is_string()) return v->get<std::string>().empty() ? "(none)" : v->get<std::string>();
  return v->dump();
}


}  // namespace

const char* const kFinetuneRunKey = kRunKey;

void check_resumable(const std::string& path, const LoadedModel& m, const nlohmann::json& now) {
  if (!m.training_state)
    fail(
        "--resume {}: the file has no training state (only an interrupted `bertrt finetune` writes "
        "one, to OUT.resume){}",
        path, resume_hint(path));
  const auto it = m.metadata.find(kRunKey);
  if (it == m.metadata.end())
    fail("--resume {}: the file lacks the '{}' record of an interrupted `bertrt finetune`", path,
         kRunKey);
  const nlohmann::json then = nlohmann::json::parse(it->second, nullptr, false);
  if (then.is_discarded()) fail("--resume {}: the '{}' record is not JSON", path, kRunKey);
  std::vector<std::string> diff;
  const auto differs = [&](const std::string& name, const std::string& key,
                           const nlohmann::json* was, const nlohmann::json* is) {
    if (was && is && *was == *is) return;
    diff.push_back(
        fmt::format("{} (checkpoint {}, now {})", name, run_value(key, was), run_value(key, is)));
  };
  const auto field = [](const nlohmann::json& j, const std::string& key) {
    return j.contains(key) ? &j[key] : nullptr;
  };
  for (const auto& [key, value] : now.items()) {
    const nlohmann::json* was = field(then, key);
    if (key == "task" && was && was->is_string() && value.is_string()) {
      // The task's record (JSON text): --max-seq-length and the task's own flags, one by one.
      const auto t0 = nlohmann::json::parse(was->get<std::string>(), nullptr, false);
      const auto t1 = nlohmann::json::parse(value.get<std::string>(), nullptr, false);
      if (t0.is_object() && t1.is_object()) {
        differs("--task", "name", field(t0, "name"), field(t1, "name"));
        if (t0.value("name", "") != t1.value("name", "")) continue;  // the rest follows from it
        differs("--max-seq-length", "max_seq_length", field(t0, "max_seq_length"),
                field(t1, "max_seq_length"));
        // The generic TSV's and SQuAD's own flags; head, labels and pair follow from them.
        for (const char* group : {"tsv", "squad"}) {
          const nlohmann::json* g0 = field(t0, group);
          const nlohmann::json* g1 = field(t1, group);
          if (!g0 || !g1 || !g0->is_object() || !g1->is_object()) continue;
          for (const auto& [k, v] : g1->items()) differs(task_flag(k), k, field(*g0, k), &v);
        }
        continue;
      }
    }
    differs(run_flag(key), key, was, &value);
  }
  for (const auto& [key, value] : then.items())  // e.g. hidden_dropout_prob, written when set
    if (!now.contains(key)) differs(run_flag(key), key, &value, nullptr);
  if (!diff.empty())
    fail(
        "--resume {}: these flags differ from the run that wrote it, so it would not continue "
        "exactly: {}",
        path, fmt::join(diff, ", "));
}

void add_finetune(CLI::App& app) {
  struct Opts {
    std::string model, resume, train, dev, out, metrics, train_articles, dev_articles;
    TaskFlags task;
    int epochs = 3;
    int64_t max_steps = 0;
    int batch_size = 32, eval_batch_size = 64, max_seq_length = 0;
    float lr = 2e-5f, warmup_ratio = 0.1f, weight_decay = 0.01f, hidden_dropout = 0.0f,
          attention_dropout = 0.0f;
    uint64_t seed = 42;
    bool group_by_length = false;
    BackendChoice backend;
    QatOptions qat;         // --qat int8 ... (qat_flags.h)
    MemoryOptions memory;   // --freeze-embeddings, --freeze-layers K, --recompute (memory_flags.h)
    EmbeddingFinetuneFlags embedding;  // --task sentence-embedding (finetune_embeddings.h)
    LoraOptions lora;       // --lora-r R ... (lora_flags.h)
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "finetune", "fine-tune on a task: GLUE presets, generic TSV, CoNLL-2003 NER, SQuAD v1.1");
  c->footer(
      "Examples:\n"
      "  bertrt finetune --model pre.brt --task sst2 --train SST-2/train.tsv --dev SST-2/dev.tsv -o sst2.brt\n"
      "  bertrt finetune --model pre.brt --task tsv --text-column sentence --label-column label \\\n"
      "      --labels neg,pos --train t.tsv --dev d.tsv -o mine.brt\n"
      "  bertrt finetune --model pre.brt --task conll2003 --train eng.train --dev eng.testa -o "
      "ner.brt\n"
      "  bertrt finetune --model pre.brt --task sst2 --train SST-2/train.tsv --lora-r 8 --lora-alpha 16 \\\n"
      "      -o sst2-lora.brt   (an adapter file: run it with --adapter sst2-lora.brt --model pre.brt)\n"
      "  bertrt finetune --model pre.brt --task squad --train dev-v1.1.json --train-articles 0-29 "
      "\\\n"
      "      --dev dev-v1.1.json --dev-articles 30-39 --max-seq-length 128 --doc-stride 64 -o "
      "qa.brt\n"
      "Terms: pieces are WordPiece tokens (`bertrt tokenize` shows them). A window is the part of\n"
      "a long input that fits --max-seq-length: a SQuAD context is read in overlapping windows\n"
      "(the question and as much context as fits) that start every --doc-stride pieces, as BERT's\n"
      "run_squad.py does; a long CoNLL sentence is split into windows too.\n"
      "Interrupted (SIGINT/SIGTERM): the step in progress finishes, the run's resumable state goes\n"
      "to OUT.resume (model + optimizer moments) and the run exits 130/143; -o OUT is written only\n"
      "when a run finishes, which removes OUT.resume. Continue with --resume OUT.resume in place\n"
      "of --model, the other flags the same.");
  auto* model_opt = c->add_option("--model", o->model, "pre-trained model (.brt); or --resume");
  c->add_option("--resume", o->resume,
                "continue the interrupted (SIGINT/SIGTERM) run that wrote this checkpoint "
                "(OUT.resume, beside its -o OUT), in place of --model; the other flags the same")
      ->excludes(model_opt);
  add_task_flags(c, o->task);
  c->add_option("--train", o->train, "training data (TSV, CoNLL file, SQuAD JSON; sentence-embedding also JSON Lines, .jsonl)")->required();
  c->add_option("--dev", o->dev, "dev data: metrics after every epoch and at the end");
  c->add_option("--train-articles", o->train_articles,
                "SQuAD: articles of --train, e.g. 0-29 (inclusive; default all)")
      ->check(not_empty("an article range like 0-29 or 7"))
      ->group("SQuAD (--task squad)");
  c->add_option("--dev-articles", o->dev_articles, "SQuAD: articles of --dev, e.g. 30-39")
      ->check(not_empty("an article range like 0-29 or 7"))
      ->group("SQuAD (--task squad)");
  auto* ep = c->add_option("--epochs", o->epochs, "passes over --train")
                 ->capture_default_str()
                 ->check(at_least(1));
  c->add_option("--max-steps", o->max_steps, "optimizer steps (instead of --epochs)")
      ->excludes(ep)
      ->check(at_least(1));
  c->add_option("--batch-size", o->batch_size, "examples per optimizer step (conll2003 and squad: windows, see below)")->capture_default_str()
      ->check(at_least(1));
  c->add_option("--eval-batch-size", o->eval_batch_size, "rows per forward pass on --dev")->capture_default_str()
      ->check(at_least(1));
  c->add_option("--max-seq-length", o->max_seq_length,
                "pieces (WordPiece tokens) per input (default 128; squad 384): longer sentences "
                "are truncated, longer CoNLL sentences and SQuAD contexts split into windows; "
                "batches are padded to their longest; sentence-embedding: the embedding head's "
                "max_seq_length (default the model's), kept in -o; reranker: default the "
                "tokenizer's model_max_length")
      ->check(at_least(3));  // [CLS] A [SEP]
  c->add_option("--learning-rate", o->lr, "peak AdamW learning rate")->capture_default_str();
  c->add_option("--warmup-ratio", o->warmup_ratio, "share of steps with linear warm-up")->capture_default_str();
  c->add_option("--weight-decay", o->weight_decay, "AdamW decay (not on LayerNorm/bias)")->capture_default_str();
  c->add_option("--hidden-dropout-prob", o->hidden_dropout,
                "dropout while training on the embeddings' output, each layer's sublayer "
                "outputs and the head's input (Hugging Face's hidden_dropout_prob, and its "
                "classifier_dropout left unset; its configs say 0.1; question answering has no "
                "head dropout); cpu and reference backends")
      ->capture_default_str();
  c->add_option("--attention-probs-dropout-prob", o->attention_dropout,
                "dropout on every layer's attention probabilities while training (Hugging Face's "
                "attention_probs_dropout_prob; its configs say 0.1); cpu and reference backends")
      ->capture_default_str();
  c->add_option("--seed", o->seed, "head init, shuffling and dropout masks")->capture_default_str()
      ->check(seed_value());
  c->add_flag("--group-by-length", o->group_by_length,
              "batch rows of similar length (sorted within runs of 50 shuffled batches, as Hugging "
              "Face group_by_length): less padding, faster steps");
  c->add_option("--metrics", o->metrics, "write JSON lines of step and dev metrics to this file");
  c->add_option("-o,--output", o->out,
                "output model OUT (.brt), written atomically when the run finishes; a run stopped "
                "by SIGINT/SIGTERM writes its resumable checkpoint to OUT.resume instead")
      ->required();
  o->backend.add_to(c);
  add_qat_flags(c, o->qat);
  add_memory_flags(c, o->memory, /*pretraining=*/false);
  add_embedding_finetune_flags(c, o->embedding);
  add_lora_flags(c, o->lora);
  c->callback([o] {
    check_lora_options(o->lora);
    if (o->lora.enabled()) {
      if (o->task.task == "reranker")
        fail_usage("--lora-r with --task {} is not supported yet", o->task.task);
      if (!o->resume.empty()) fail_usage("--lora-r with --resume: LoRA runs cannot resume yet");
      if (o->qat.enabled())
        fail_usage("--lora-r with --qat int8: train the adapters in fp32, then merge them "
                   "(bertrt merge) and quantize the merged model");
      if (o->memory.freeze_embeddings || o->memory.freeze_layers)
        fail_usage("--lora-r with --freeze-embeddings/--freeze-layers: the adapters already "
                   "freeze the whole base");
    }
    if (o->task.task == "reranker") {
      if (!o->resume.empty() || o->qat.enabled() || o->memory.freeze_embeddings ||
          o->memory.freeze_layers || o->memory.recompute || o->group_by_length)
        fail_usage("--task reranker takes none of --resume, --qat, the memory flags or "
                   "--group-by-length");
      for (const auto* opt : o->task.tsv_options)
        if (opt->count()) fail_usage("{} applies to --task tsv", opt->get_name());
      for (const auto* opt : o->task.squad_options)
        if (opt->count()) fail_usage("{} applies to --task squad", opt->get_name());
      for (const auto* opt : o->embedding.options)
        if (opt->count()) fail_usage("{} applies to --task sentence-embedding", opt->get_name());
      if (o->model.empty()) fail_usage("--model is required");
      EmbeddingFinetuneRun r;
      r.model = o->model, r.train = o->train, r.dev = o->dev, r.out = o->out;
      r.metrics = o->metrics, r.train_articles = o->train_articles, r.dev_articles = o->dev_articles;
      r.epochs = o->epochs, r.max_steps = o->max_steps, r.batch_size = o->batch_size;
      r.eval_batch_size = o->eval_batch_size, r.lr = o->lr, r.warmup_ratio = o->warmup_ratio;
      r.weight_decay = o->weight_decay, r.seed = o->seed, r.backend = &o->backend;
      r.hidden_dropout = o->hidden_dropout, r.attention_dropout = o->attention_dropout;
      r.max_seq_length = o->max_seq_length;
      return run_reranker_finetune(r);
    }
    if (o->task.task == "sentence-embedding") {
      if (o->memory.freeze_embeddings || o->memory.freeze_layers || o->memory.recompute ||
          o->group_by_length)
        fail_usage("--task sentence-embedding takes none of the memory flags or "
                   "--group-by-length");
      check_qat_options(o->qat);
      if (!o->resume.empty() && o->qat.enabled())
        fail_usage("--resume with --qat int8: resuming quantization-aware runs is not supported yet");
      for (const auto* opt : o->task.tsv_options)
        if (opt->count()) fail_usage("{} applies to --task tsv", opt->get_name());
      for (const auto* opt : o->task.squad_options)
        if (opt->count()) fail_usage("{} applies to --task squad", opt->get_name());
      if (o->model.empty() && o->resume.empty()) fail_usage("--model or --resume is required");
      EmbeddingFinetuneRun r;
      r.model = o->model, r.resume = o->resume, r.train = o->train, r.dev = o->dev, r.out = o->out;
      r.metrics = o->metrics, r.train_articles = o->train_articles, r.dev_articles = o->dev_articles;
      r.epochs = o->epochs, r.max_steps = o->max_steps, r.batch_size = o->batch_size;
      r.eval_batch_size = o->eval_batch_size, r.lr = o->lr, r.warmup_ratio = o->warmup_ratio;
      r.weight_decay = o->weight_decay, r.seed = o->seed, r.backend = &o->backend;
      r.hidden_dropout = o->hidden_dropout, r.attention_dropout = o->attention_dropout;
      r.max_seq_length = o->max_seq_length;
      r.qat = &o->qat;
      r.lora = &o->lora;
      return run_embedding_finetune(r, o->embedding);
    }
    for (const auto* opt : o->embedding.options)
      if (opt->count()) fail_usage("{} applies to --task sentence-embedding", opt->get_name());
    check_qat_options(o->qat);
    check_memory_options(o->memory);
    if (o->memory.recompute && o->qat.enabled())
      fail_usage(
          "--recompute with --qat int8: a recomputed forward would update the activation "
          "observers twice a step; drop one of the two");
    check_output_path("-o", o->out);
    if (o->model.empty() && o->resume.empty()) fail_usage("--model or --resume is required");
    const bool resuming = !o->resume.empty();
    const std::string& model_path = resuming ? o->resume : o->model;
    check_input_file(resuming ? "--resume" : "--model", model_path);
    if (resuming && o->qat.enabled())
      fail_usage("--resume with --qat int8: resuming quantization-aware runs is not supported yet");
    check_input_file("--train", o->train);
    if (!o->dev.empty()) check_input_file("--dev", o->dev);
    if (!o->metrics.empty()) check_output_path("--metrics", o->metrics);
    check_distinct_files(
        {{"-o", o->out}, {"-o's checkpoint", resume_path(o->out)}, {"--metrics", o->metrics},
         {"--save-fake-quant", o->qat.save_fake_quant}},
        {{"--train", o->train}, {"--dev", o->dev}});
    // -o never replaces the model it starts from: a failed or unwanted run must not cost it.
    check_distinct_files({{"-o", o->out}, {"--metrics", o->metrics}},
                         {{resuming ? "--resume" : "--model", model_path}});
    if (o->epochs < 1 && o->max_steps <= 0) fail_usage("--epochs must be ≥ 1, got {}", o->epochs);
    if (!(o->warmup_ratio >= 0 && o->warmup_ratio <= 1))
      fail_usage("--warmup-ratio must be in [0, 1], got {}", o->warmup_ratio);
    check_positive("--learning-rate", o->lr);
    check_positive("--weight-decay", o->weight_decay, /*allow_zero=*/true);
    if (!(o->hidden_dropout >= 0.0f && o->hidden_dropout < 1.0f))
      fail_usage("--hidden-dropout-prob must be in [0, 1), got {}", o->hidden_dropout);
    if (!(o->attention_dropout >= 0.0f && o->attention_dropout < 1.0f))
      fail_usage("--attention-probs-dropout-prob must be in [0, 1), got {}", o->attention_dropout);
    TaskDefinition task = task_from_flags(o->task, o->train, o->max_seq_length);
    if (task.name != "squad" && !(o->train_articles.empty() && o->dev_articles.empty()))
      fail_usage("--train-articles/--dev-articles apply to --task squad only");
    const ArticleRange train_articles = o->train_articles.empty()
        ? ArticleRange{} : parse_article_range(o->train_articles, "--train-articles");
    const ArticleRange dev_articles = o->dev_articles.empty()
                                          ? ArticleRange{}
                                          : parse_article_range(o->dev_articles, "--dev-articles");
    LoadOptions load;
    load.training_state = resuming;  // only a resumed run reads the optimizer moments
    LoadedModel m = load_model(model_path, load);
    BertModel& model = *m.model;
    const Tokenizer& tok = *m.tokenizer;
    if (o->lora.enabled()) {  // the adapters' shape against this model, before the data
      try {
        lora_sites(model.config(), o->lora.config(), o->lora.where());
      } catch (const UsageError&) {
        throw;
      } catch (const Error& e) {
        throw UsageError(e.what());
      }
    }
    // Adapters over an int8 model train (model/lora_int8.h); anything else on one is refused
    // before the notes and the data: set_heads says it.
    const bool int8_base = model.quant_mode() == QuantMode::kInt8;
    if (int8_base && !o->lora.enabled()) model.set_heads(model.heads(), o->seed);
    // The task's default length, where the model takes fewer positions (a small converted
    // checkpoint): its max_position_embeddings, as run_glue.py caps it, with a note.
    if (o->max_seq_length == 0 && task.max_seq_length > model.config().max_position_embeddings) {
      task.max_seq_length = task.squad.max_seq_length = model.config().max_position_embeddings;
      fmt::print(stderr,
                 "bertrt: note: --max-seq-length {} (the model's max_position_embeddings; the "
                 "task's default is longer)\n",
                 task.max_seq_length);
    }
    check_max_seq_length("--max-seq-length", task.max_seq_length,
                         model.config().max_position_embeddings);
    if (task.name == "squad") {
      const int window = task.max_seq_length - task.squad.max_query_length - 3;
      // The window shrinks as the question grows: warn for the longest question allowed.
      if (task.squad.doc_stride > window)
        fmt::print(stderr,
                   "bertrt: note: --doc-stride {} is longer than the context window after a "
                   "question of --max-query-length {} pieces (WordPiece tokens; {} pieces with "
                   "--max-seq-length {}): after "
                   "questions that long, windows leave context out; --doc-stride {} or less "
                   "covers every piece\n",
                   task.squad.doc_stride, task.squad.max_query_length, window, task.max_seq_length,
                   std::max(1, window));
    }
    if (!resuming && model.heads().resolved_kind() != HeadKind::kNone)
      fmt::print(stderr,
                 "bertrt: note: {} already has a {} head{}; it is kept when kind and shape match (its "
                 "labels matched to the task's by name), replaced otherwise\n",
                 o->model, head_kind_name(model.heads().resolved_kind()),
                 model.heads().task.empty() ? "" : " (" + model.heads().task + ")");

    const auto train = load_task_data(task, tok, o->train, train_articles);
    fmt::print("train {}: {}\n", o->train, train->summary());
    std::unique_ptr<TaskData> dev;
    if (!o->dev.empty()) {
      dev = load_task_data(task, tok, o->dev, dev_articles);
      check_evaluable(*dev, task, "--dev " + o->dev);
      fmt::print("dev {}: {}\n", o->dev, dev->summary());
    }
    std::fflush(stdout);
    uint32_t base_checksum = 0;
    if (o->lora.enabled()) base_checksum = adapter_base_checksum(model);
    if (o->lora.enabled() && int8_base) {
      model.set_heads_over_int8(task.heads(), o->seed);  // an fp32 head; the base stays int8
    } else {
      model.set_heads(task.heads(), o->seed);
      apply_qat(model, o->qat, model_path);
    }
    if (o->lora.enabled()) {
      model.attach_lora(o->lora.config(), o->seed, o->lora.where());
      fmt::print("{}\n", lora_summary(model, o->lora));
    }
    auto be = o->backend.make();

    FinetuneHyper hyper;  // shared with the C API's trainer (train/finetune_setup.h)
    hyper.epochs = o->epochs, hyper.max_steps = o->max_steps, hyper.batch_size = o->batch_size;
    hyper.learning_rate = o->lr, hyper.warmup_ratio = o->warmup_ratio;
    hyper.weight_decay = o->weight_decay, hyper.seed = o->seed;
    hyper.group_by_length = o->group_by_length;
    const int64_t steps_per_epoch = finetune_steps_per_epoch(hyper, train->size());
    const int64_t total = finetune_total_steps(hyper, train->size());
    Trainer trainer(model, *be, finetune_optim_options(hyper, total), o->memory);
    trainer.set_dropout(o->hidden_dropout, o->seed, o->attention_dropout);
    std::error_code ec;
    nlohmann::json run = {{"task", task_definition_json(task)},
                          {"train", o->train},
                          {"train_bytes", std::filesystem::file_size(o->train, ec)},
                          {"train_articles", o->train_articles},
                          {"batch_size", o->batch_size},
                          {"total_steps", total},
                          {"learning_rate", o->lr},
                          {"warmup_ratio", o->warmup_ratio},
                          {"weight_decay", o->weight_decay},
                          {"seed", o->seed},
                          {"group_by_length", o->group_by_length},
                          {"backend", o->backend.name}};
    // Only when set, so that checkpoints written before the flag existed still resume.
    // (As the flag was written: the float's shortest decimal, not its double expansion.)
    if (o->hidden_dropout > 0.0f)
      run["hidden_dropout_prob"] = std::stod(fmt::format("{}", o->hidden_dropout));
    if (o->attention_dropout > 0.0f)
      run["attention_probs_dropout_prob"] = std::stod(fmt::format("{}", o->attention_dropout));
    // What is trained (not --recompute: same bits).
    if (o->memory.freeze_embeddings) run["freeze_embeddings"] = true;
    if (o->memory.freeze_layers > 0) run["freeze_layers"] = o->memory.freeze_layers;
    if (resuming) {
      check_resumable(o->resume, m, run);
      restore_training_state(trainer, *m.training_state, o->resume);  // copies the moments
      m.file.release_optimizer_pages();  // the model may keep the mapping: not these pages
      fmt::print("resuming {} at step {} of {}\n", o->resume, trainer.steps_done(), total);
    }
    release_file_pages_once_copied(m);  // set_heads copied the weights
    MetricsLog metrics = o->metrics.empty() ? MetricsLog()
                         : resuming         ? MetricsLog(o->metrics, trainer.steps_done())
                                            : MetricsLog(o->metrics);
    // The run record (kRunKey) is for checkpoints only: finetuned_metadata drops it.
    auto meta = finetuned_metadata(m.metadata, task, total, "bertrt finetune", kRunKey);
    catch_stop_signals();
    auto evaluate = [&](int64_t step) {
      if (!dev) return;
      const TaskMetrics ev = dev->evaluate(model, *be, o->eval_batch_size);
      fmt::print("dev after step {}: {} (loss {:.4f}, {} examples)\n", step, metrics_text(ev),
                 ev.loss, ev.examples);
      std::fflush(stdout);
      nlohmann::json j = metrics_json(ev);  // the names eval --json writes
      j["eval"] = "dev", j["step"] = step, j["loss"] = ev.loss, j["examples"] = ev.examples;
      metrics.write(j);
    };
    ProgressBar bar("finetune " + task.name, total);
    finetune(
        trainer, *train, o->batch_size, total, o->seed,
        [&](const FinetuneStepLog& log) {
          const ForwardResult& f = log.result.fwd;
          nlohmann::json j{{"step", log.step},
                           {"epoch", log.epoch},
                           {"loss", f.loss},
                           {"learning_rate", log.result.learning_rate},
                           {"grad_norm", log.result.grad_norm},
                           {"tokens_per_second", log.tokens_per_second},
                           {"elapsed_seconds", log.elapsed_seconds}};
          if (task.family() == TaskFamily::kSequence && !task.regression())
            j["accuracy"] = f.cls.count ? double(f.cls.correct) / f.cls.count : 0;
          metrics.write(j);
          bar.update(log.step, fmt::format("epoch {} loss {:.4f} | {:.0f} tok/s", log.epoch, f.loss,
                                           log.tokens_per_second));
          if (log.step % steps_per_epoch == 0 && log.step != total) evaluate(log.step);
          // SIGINT/SIGTERM (interrupt.h): checkpoint this step with its training state, then out.
          if (const int sig = stop_signal(); sig && log.step != total) {
            bar.stop(log.step, signal_name(sig));
            if (o->lora.enabled())
              throw Interrupted(
                  sig,
                  fmt::format("{} at step {} of {}: no checkpoint written (LoRA runs cannot "
                              "resume yet); {} is unchanged",
                              signal_name(sig), log.step, total, o->out));
            if (o->qat.enabled())
              throw Interrupted(
                  sig,
                  fmt::format("{} at step {} of {}: no checkpoint written (--qat int8 runs cannot "
                              "resume yet); {} is unchanged",
                              signal_name(sig), log.step, total, o->out));
            auto ckpt_meta = meta;
            ckpt_meta[kRunKey] = run.dump();
            // Beside -o, not over it: -o is a finished model (or what it was before the run).
            const std::string ckpt = resume_path(o->out);
            save_model(
                ckpt, model, tok, ckpt_meta,
                capture_training_state(trainer, {}, uint64_t(log.step) * uint64_t(o->batch_size)));
            throw Interrupted(
                sig,
                fmt::format("{} at step {} of {}: wrote the resumable checkpoint {} (continue with "
                            "--resume {} in place of --model, the other flags the same; {} is written when the run "
                            "finishes)",
                            signal_name(sig), log.step, total, ckpt, ckpt, o->out));
          }
        },
        o->group_by_length);
    bar.finish();
    evaluate(total);
    if (o->lora.enabled())
      save_adapter(o->out, model, tok, base_checksum, meta,
                   std::filesystem::path(model_path).filename().string());
    else
      save_finetuned(o->out, model, tok, meta, o->qat);  // int8 with --qat int8
    remove_resume_checkpoint(o->out);                  // an earlier step of this run
    fmt::print("wrote {}\n", o->out);
  });
}

}  // namespace bertrt::cli
