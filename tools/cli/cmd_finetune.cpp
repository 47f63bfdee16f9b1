// bertrt finetune: sequence classification on a GLUE task (paper §4.1): [CLS] pooled output →
// a fresh linear classifier, all weights trained, dev accuracy after every epoch.
#include <fmt/format.h>

#include <cstdio>

#include <cmath>

#include "common.h"
#include "core/error.h"
#include "io/model_io.h"
#include "progress.h"
#include "qat_flags.h"
#include "tasks/tsv_task.h"
#include "train/finetune.h"
#include "train/metrics_log.h"
#include "train/schedule.h"

namespace bertrt::cli {

void add_finetune(CLI::App& app) {
  struct Opts {
    std::string model, task, train, dev, out, metrics;
    int epochs = 3;
    int64_t max_steps = 0;
    int batch_size = 32, max_seq_length = 128;
    float lr = 2e-5f, warmup_ratio = 0.1f, weight_decay = 0.01f;
    uint64_t seed = 42;
    BackendChoice backend;
    QatOptions qat;  // --qat int8 ... (qat_flags.h)
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand("finetune", "fine-tune a classifier on a task (sst2)");
  c->add_option("--model", o->model, "pre-trained model (.brt)")->required();
  c->add_option("--task", o->task, "task name: sst2")->required();
  c->add_option("--train", o->train, "training TSV")->required();
  c->add_option("--dev", o->dev, "dev TSV: accuracy after every epoch and at the end")->required();
  auto* ep = c->add_option("--epochs", o->epochs, "passes over --train")->capture_default_str();
  c->add_option("--max-steps", o->max_steps, "optimizer steps (instead of --epochs)")->excludes(ep);
  c->add_option("--batch-size", o->batch_size, "examples per optimizer step")->capture_default_str();
  c->add_option("--max-seq-length", o->max_seq_length, "truncate longer examples (batches are padded to their longest)")->capture_default_str();
  c->add_option("--learning-rate", o->lr, "peak AdamW learning rate")->capture_default_str();
  c->add_option("--warmup-ratio", o->warmup_ratio, "share of steps with linear warm-up")->capture_default_str();
  c->add_option("--weight-decay", o->weight_decay, "AdamW decay (not on LayerNorm/bias)")->capture_default_str();
  c->add_option("--seed", o->seed, "classifier init and shuffling")->capture_default_str();
  c->add_option("--metrics", o->metrics, "write JSON lines of step metrics to this file");
  c->add_option("-o,--output", o->out, "output model (.brt), written atomically")->required();
  o->backend.add_to(c);
  add_qat_flags(c, o->qat);
  c->callback([o] {
    check_qat_options(o->qat);
    check_output_path("-o", o->out);
    check_input_file("--model", o->model);
    check_input_file("--train", o->train);
    check_input_file("--dev", o->dev);
    if (!o->metrics.empty()) check_output_path("--metrics", o->metrics);
    if (o->batch_size < 1) fail("--batch-size must be ≥ 1, got {}", o->batch_size);
    if (o->epochs < 1 && o->max_steps <= 0) fail("--epochs must be ≥ 1, got {}", o->epochs);
    check_positive("--learning-rate", o->lr);
    check_positive("--weight-decay", o->weight_decay, /*allow_zero=*/true);
    const TaskSpec& spec = glue_task(o->task);
    LoadedModel m = load_model(o->model);
    BertModel& model = *m.model;
    const Tokenizer& tok = *m.tokenizer;
    check_max_seq_length("--max-seq-length", o->max_seq_length,
                         model.config().max_position_embeddings);
    if (model.heads().classifier())
      fmt::print(stderr, "note: {} already has a classifier ({}); it is kept when the labels match, "
                 "replaced otherwise\n", o->model, model.heads().task);
    const auto train = encode_examples(tok, read_glue_tsv(o->train, spec), o->max_seq_length);
    const auto dev = encode_examples(tok, read_glue_tsv(o->dev, spec), o->max_seq_length);
    HeadsConfig heads;
    heads.labels = spec.labels;
    heads.task = o->task;
    model.set_heads(heads, o->seed);
    apply_qat(model, o->qat, o->model);
    auto be = o->backend.make();
    MetricsLog metrics = o->metrics.empty() ? MetricsLog() : MetricsLog(o->metrics);

    const int64_t steps_per_epoch = int64_t((train.size() + o->batch_size - 1) / o->batch_size);
    const int64_t total = o->max_steps > 0 ? o->max_steps : steps_per_epoch * o->epochs;
    OptimOptions oo;
    oo.learning_rate = o->lr;
    oo.total_steps = total;
    oo.warmup_steps = warmup_steps_from_ratio(total, o->warmup_ratio);
    oo.weight_decay = o->weight_decay;
    Trainer trainer(model, *be, oo);
    auto evaluate = [&](int64_t step) {
      const ClassificationEval ev = evaluate_classification(model, *be, dev, 64, tok.pad_id());
      fmt::print("dev after step {}: accuracy {:.4f} (loss {:.4f}, {} examples)\n", step,
                 ev.accuracy, ev.loss, ev.examples);
      std::fflush(stdout);
      metrics.write({{"eval", "dev"}, {"step", step}, {"accuracy", ev.accuracy}, {"loss", ev.loss},
                     {"examples", ev.examples}});
      return ev;
    };
    ProgressBar bar("finetune " + o->task, total);
    finetune(trainer, train, o->batch_size, total, o->seed, tok.pad_id(),
             [&](const FinetuneStepLog& log) {
               const ForwardResult& f = log.result.fwd;
               const double acc = f.cls.count ? double(f.cls.correct) / f.cls.count : 0;
               metrics.write({{"step", log.step}, {"epoch", log.epoch}, {"loss", f.loss},
                              {"accuracy", acc}, {"learning_rate", log.result.learning_rate},
                              {"grad_norm", log.result.grad_norm},
                              {"tokens_per_second", log.tokens_per_second},
                              {"elapsed_seconds", log.elapsed_seconds}});
               bar.update(log.step, fmt::format("epoch {} loss {:.4f} | {:.0f} tok/s", log.epoch,
                                                f.loss, log.tokens_per_second));
               if (log.step % steps_per_epoch == 0 && log.step != total) evaluate(log.step);
             });
    bar.finish();
    evaluate(total);
    auto meta = m.metadata;
    meta["source"] = "bertrt finetune";
    meta["finetune_task"] = o->task;
    meta["finetune_steps"] = std::to_string(total);
    save_finetuned(o->out, model, tok, meta, o->qat);  // int8 with --qat int8
    fmt::print("wrote {}\n", o->out);
  });
}

}  // namespace bertrt::cli
