// On-device fine-tuning through the C API: the loop, options and save of `bertrt finetune`
// (train/finetune.h FinetuneLoop, train/finetune_setup.h), one step call at a time.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "backends/cpu/cpu_backend.h"
#include "bertrt/bertrt.h"
#include "capi/api_error.h"
#include "capi/batch.h"
#include "capi/handles.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "tasks/label_names.h"
#include "tasks/tsv_task.h"
#include "train/finetune.h"
#include "train/finetune_setup.h"
#include "train/metrics_report.h"
#include "train/task_data.h"

using namespace bertrt;
using namespace bertrt::capi;

struct bertrt_trainer {
  bertrt_model* model = nullptr;
  TaskDefinition task;
  FinetuneHyper hyper;
  int eval_batch_size = 64;
  bool qat = false;
  std::unique_ptr<TaskData> train;
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<FinetuneLoop> loop;
  int64_t total_steps = 0;
  std::map<std::string, std::string> metadata;
  std::string failure;     // the message of a failed step: later steps and saves refuse
  bool converted = false;  // saved with qat: the model is int8 now
  StepClock clock;         // tokens/s of batches fed by the caller
  bertrt_progress_fn progress = nullptr;
  void* progress_user = nullptr;
  ~bertrt_trainer() {
    if (model) model->training = false;
  }
};

namespace {

std::string str(const char* s) { return s ? s : ""; }

TaskDefinition task_from_options(const bertrt_finetune_options& o, const std::string& train_path) {
  const char* fn = "bertrt_trainer_create";
  if (!o.task || !*o.task)
    api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: options.task is required (e.g. \"sst2\")", fn);
  const std::string name = o.task;
  GenericTsvOptions tsv;
  tsv.names = GenericTsvOptions::Names::kApiOptions;
  if (name == "tsv") {
    tsv.text_column = str(o.text_column);
    tsv.text_pair_column = str(o.text_pair_column);
    tsv.label_column = str(o.label_column);
    if (o.labels && *o.labels) tsv.labels = parse_label_list(o.labels, "options.labels");
    tsv.regression = o.regression != 0;
    tsv.has_header = o.no_header == 0;
    if (tsv.text_column.empty() || tsv.label_column.empty())
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: task tsv needs options.text_column and options.label_column (and "
               "options.labels or options.regression)",
               fn);
  } else if (o.text_column || o.text_pair_column || o.label_column || o.labels || o.regression ||
             o.no_header) {
    api_fail(BERTRT_E_INVALID_ARGUMENT,
             "{}: options.text_column/text_pair_column/label_column/labels/regression/no_header "
             "apply to task tsv only (this is task {})",
             fn, name);
  }
  TaskDefinition d;
  try {
    d = make_task_definition(name, tsv, train_path);
  } catch (const Error& e) {
    api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: options.task: {}", fn, e.what());
  }
  if (o.max_seq_length < 0)
    api_fail(BERTRT_E_INVALID_ARGUMENT,
             "{}: options.max_seq_length must be ≥ 0 (0: default), got {}", fn, o.max_seq_length);
  if (o.max_seq_length > 0) d.max_seq_length = o.max_seq_length;
  if (d.name == "squad") d.squad.max_seq_length = d.max_seq_length;
  return d;
}

void check_hyper(const bertrt_finetune_options& o) {
  const char* fn = "bertrt_trainer_create";
  auto bad = [&](const char* field, const std::string& want, const std::string& got) {
    api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: options.{} must be {}, got {}", fn, field, want, got);
  };
  if (o.batch_size < 1) bad("batch_size", "≥ 1", std::to_string(o.batch_size));
  if (o.eval_batch_size < 1) bad("eval_batch_size", "≥ 1", std::to_string(o.eval_batch_size));
  if (o.max_steps < 0) bad("max_steps", "≥ 0 (0: epochs)", std::to_string(o.max_steps));
  if (o.max_steps == 0 && o.epochs < 1) bad("epochs", "≥ 1", std::to_string(o.epochs));
  if (!std::isfinite(o.learning_rate) || o.learning_rate <= 0)
    bad("learning_rate", "a finite number > 0", fmt::format("{}", o.learning_rate));
  if (!(o.warmup_ratio >= 0 && o.warmup_ratio <= 1))
    bad("warmup_ratio", "in [0, 1]", fmt::format("{}", o.warmup_ratio));
  if (!std::isfinite(o.weight_decay) || o.weight_decay < 0)
    bad("weight_decay", "a finite number ≥ 0", fmt::format("{}", o.weight_decay));
  if (!(o.hidden_dropout_prob >= 0 && o.hidden_dropout_prob < 1))
    bad("hidden_dropout_prob", "in [0, 1)", fmt::format("{}", o.hidden_dropout_prob));
  if (!(o.attention_probs_dropout_prob >= 0 && o.attention_probs_dropout_prob < 1))
    bad("attention_probs_dropout_prob", "in [0, 1)",
        fmt::format("{}", o.attention_probs_dropout_prob));
  if (o.freeze_embeddings != 0 && o.freeze_embeddings != 1)
    bad("freeze_embeddings", "0 or 1", std::to_string(o.freeze_embeddings));
  if (o.recompute != 0 && o.recompute != 1) bad("recompute", "0 or 1", std::to_string(o.recompute));
  if (o.qat != 0 && o.qat != 1) bad("qat", "0 or 1", std::to_string(o.qat));
  if (o.recompute && o.qat)  // as `bertrt finetune`
    api_fail(BERTRT_E_INVALID_ARGUMENT,
             "{}: options.recompute with options.qat: a recomputed forward would update the "
             "activation observers twice a step; drop one of the two",
             fn);
}

bertrt_trainer& trainer_arg(bertrt_trainer* t, const char* fn) {
  require(t, fn, "trainer");
  return *t;
}

void check_usable(const bertrt_trainer& t, const char* fn) {
  if (!t.failure.empty())
    api_fail(BERTRT_E_STATE,
             "{}: a previous step failed ({}); the weights may be half-updated: load the model "
             "again and create a new trainer",
             fn, t.failure);
  if (t.converted)
    api_fail(BERTRT_E_STATE,
             "{}: the quantization-aware run was saved as int8; the trainer is done", fn);
}

}  // namespace

extern "C" {

void bertrt_finetune_options_init(bertrt_finetune_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(*o);
  const FinetuneHyper h;  // the CLI's defaults
  o->epochs = h.epochs;
  o->max_steps = h.max_steps;
  o->batch_size = h.batch_size;
  o->eval_batch_size = 64;
  o->learning_rate = h.learning_rate;
  o->warmup_ratio = h.warmup_ratio;
  o->weight_decay = h.weight_decay;
  o->seed = h.seed;
}

bertrt_status bertrt_trainer_create(bertrt_model* model, const bertrt_finetune_options* options,
                                    const char* train_path, bertrt_trainer** out) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_trainer_create";
    bertrt_model& m = model_arg(model, fn);
    require(options, fn, "options");
    require(out, fn, "out");
    *out = nullptr;
    bertrt_finetune_options o;
    bertrt_finetune_options_init(&o);
    copy_options(o, *options, fn, "bertrt_finetune_options_init");
    if (m.training) api_fail(BERTRT_E_STATE, "{}: the model already has a trainer", fn);
    if (m.loaded.model->adapter())
      api_fail(BERTRT_E_STATE,
               "{}: the model runs the adapter {}: detach it first (bertrt_model_set_adapter with "
               "NULL)",
               fn, m.loaded.model->adapter()->source);
    check_hyper(o);
    std::error_code ec;
    if (!train_path) {
      if (o.max_steps <= 0)
        api_fail(BERTRT_E_INVALID_ARGUMENT,
                 "{}: options.max_steps must be > 0 when train_path is NULL (the schedule's length "
                 "for batches fed through bertrt_trainer_step_batch)",
                 fn);
      if (o.task && std::string(o.task) == "tsv")
        api_fail(BERTRT_E_INVALID_ARGUMENT,
                 "{}: task tsv reads its columns from train_path, which is NULL", fn);
    } else if (!std::filesystem::is_regular_file(train_path, ec)) {
      api_fail(BERTRT_E_IO, "{}: train_path {}: {}", fn, train_path, not_a_file_reason(train_path));
    }
    BertModel& bm = *m.loaded.model;
    const int layers = bm.config().num_hidden_layers;
    if (o.freeze_layers < 0 || o.freeze_layers > layers)  // before anything changes the model
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: options.freeze_layers must be in [0, {}] (num_hidden_layers), got {}", fn,
               layers, o.freeze_layers);
    if (bm.quant_mode() == QuantMode::kInt8)
      api_fail(BERTRT_E_UNSUPPORTED,
               "{}: {}: an int8 model is for inference only; fine-tune its float or fake-quant "
               "source",
               fn, m.source);
    if ((o.hidden_dropout_prob > 0 || o.attention_probs_dropout_prob > 0) &&
        !m.backend->supports(Op::kDropout))
      api_fail(BERTRT_E_UNSUPPORTED,
               "{}: options.hidden_dropout_prob {} / attention_probs_dropout_prob {}: the {} "
               "backend has no dropout op; use 0 on it",
               fn, o.hidden_dropout_prob, o.attention_probs_dropout_prob, m.backend->name());
    auto t = std::make_unique<bertrt_trainer>();
    t->task = task_from_options(o, train_path ? train_path : "");
    if (t->task.max_seq_length < 3 || t->task.max_seq_length > bm.config().max_position_embeddings)
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: options.max_seq_length {} must be in [3, {}] (max_position_embeddings)", fn,
               t->task.max_seq_length, bm.config().max_position_embeddings);
    t->hyper.epochs = o.epochs, t->hyper.max_steps = o.max_steps;
    t->hyper.batch_size = o.batch_size, t->hyper.learning_rate = o.learning_rate;
    t->hyper.warmup_ratio = o.warmup_ratio, t->hyper.weight_decay = o.weight_decay;
    t->hyper.seed = o.seed, t->hyper.group_by_length = o.group_by_length != 0;
    t->eval_batch_size = o.eval_batch_size;
    t->qat = o.qat != 0;
    // Data first: a bad file fails here, before the model's heads change.
    if (train_path) {
      try {
        t->train = load_task_data(t->task, *m.loaded.tokenizer, train_path);
      } catch (const Error& e) {
        api_fail(BERTRT_E_IO, "{}: train_path: {}", fn, e.what());
      }
      if (t->train->size() == 0)
        api_fail(BERTRT_E_IO, "{}: train_path {}: no training rows", fn, train_path);
    }
    // The weights change from here on: the backend drops what it derived from them while they
    // were declared constant (model.cpp) and computes as `bertrt finetune`'s does, for good.
    {
      std::lock_guard<std::mutex> lock(m.forward_mutex);
      if (auto* cpu_be = dynamic_cast<CpuBackend*>(m.backend.get()))
        cpu_be->set_constant_weights(false);
    }
    // As `bertrt finetune`: the task's head, QAT on/off, the trainer, the metadata.
    bm.set_heads(t->task.heads(), t->hyper.seed);
    release_file_pages_once_copied(m.loaded);  // set_heads copied the weights
    prepare_finetune_quant(bm, t->qat, QatConfig{}, m.source);
    t->total_steps = t->train ? finetune_total_steps(t->hyper, t->train->size()) : o.max_steps;
    MemoryOptions memory;
    memory.freeze_embeddings = o.freeze_embeddings != 0;
    memory.freeze_layers = o.freeze_layers;
    memory.recompute = o.recompute != 0;
    t->trainer = std::make_unique<Trainer>(
        bm, *m.backend, finetune_optim_options(t->hyper, t->total_steps), memory);
    t->trainer->set_dropout(o.hidden_dropout_prob, t->hyper.seed,
                            o.attention_probs_dropout_prob);  // as `bertrt finetune`
    if (t->train)
      t->loop =
          std::make_unique<FinetuneLoop>(*t->trainer, *t->train, t->hyper.batch_size,
                                         t->total_steps, t->hyper.seed, t->hyper.group_by_length);
    t->metadata =
        finetuned_metadata(m.loaded.metadata, t->task, t->total_steps, "bertrt C API finetune");
    t->model = &m;
    m.training = true;
    m.task = t->task.name;
    m.labels = prediction_labels(bm.heads().labels, m.task);
    *out = t.release();
  });
}

void bertrt_trainer_free(bertrt_trainer* trainer) { delete trainer; }

bertrt_status bertrt_trainer_set_progress(bertrt_trainer* trainer, bertrt_progress_fn fn,
                                          void* user_data) {
  return guard(BERTRT_E_FAILED, [&] {
    bertrt_trainer& t = trainer_arg(trainer, "bertrt_trainer_set_progress");
    t.progress = fn;
    t.progress_user = user_data;
  });
}

bertrt_status bertrt_trainer_total_steps(const bertrt_trainer* trainer, int64_t* out) {
  return guard(BERTRT_E_FAILED, [&] {
    require(trainer, "bertrt_trainer_total_steps", "trainer");
    require(out, "bertrt_trainer_total_steps", "out");
    *out = trainer->total_steps;
  });
}

bertrt_status bertrt_trainer_step(bertrt_trainer* trainer, int64_t steps,
                                  bertrt_step_metrics* last) {
  bool cancelled = false;
  const bertrt_status s = guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_trainer_step";
    bertrt_trainer& t = trainer_arg(trainer, fn);
    check_usable(t, fn);
    if (steps < 1) api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: steps must be ≥ 1, got {}", fn, steps);
    if (!t.loop)
      api_fail(BERTRT_E_STATE,
               "{}: the trainer has no training file (created with train_path NULL): feed batches "
               "with bertrt_trainer_step_batch",
               fn);
    if (t.loop->done())  // as bertrt_trainer_step_batch says
      api_fail(BERTRT_E_STATE, "{}: training is finished ({} of {} steps)", fn,
               t.trainer->steps_done(), t.total_steps);
    std::lock_guard<std::mutex> lock(t.model->forward_mutex);
    for (int64_t i = 0; i < steps && !t.loop->done(); ++i) {
      FinetuneStepLog log;
      try {
        log = t.loop->step();
      } catch (const std::exception& e) {
        t.failure = e.what();
        throw;
      }
      bertrt_step_metrics sm{log.step,
                             log.total_steps,
                             log.epoch,
                             log.result.fwd.loss,
                             log.result.learning_rate,
                             log.result.grad_norm,
                             log.tokens_per_second,
                             log.elapsed_seconds};
      if (last) *last = sm;
      if (t.progress && t.progress(&sm, t.progress_user) != 0) {
        cancelled = true;
        return;
      }
    }
  });
  if (s == BERTRT_OK && cancelled) {
    set_last_error("bertrt_trainer_step: the progress callback asked to stop");
    return BERTRT_E_CANCELLED;
  }
  return s;
}

bertrt_status bertrt_trainer_step_batch(bertrt_trainer* trainer, const bertrt_batch* batch,
                                        const int32_t* labels, const float* scores,
                                        bertrt_step_metrics* metrics) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_trainer_step_batch";
    bertrt_trainer& t = trainer_arg(trainer, fn);
    check_usable(t, fn);
    if (t.task.family() != TaskFamily::kSequence)
      api_fail(BERTRT_E_UNSUPPORTED,
               "{}: task {} is not a sequence task (classification or regression); feed it a "
               "training file",
               fn, t.task.name);
    const EncoderInputs in = batch_inputs(*t.model, batch, fn);
    Targets targets;
    // The other task kind's targets are a caller's mix-up, not something to ignore.
    if (t.task.regression() ? labels != nullptr : scores != nullptr)
      api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: task {} is {}: pass {} and NULL for {}", fn,
               t.task.name, t.task.regression() ? "a regression" : "a classification",
               t.task.regression() ? "scores" : "labels",
               t.task.regression() ? "labels" : "scores");
    if (t.task.regression()) {
      require(scores, fn, "scores");
      // A preset's range, as its files are read (STS-B: [0, 5]); a generic TSV task has none.
      const std::vector<std::string> presets = glue_task_names();
      const bool preset = std::find(presets.begin(), presets.end(), t.task.name) != presets.end();
      const TaskSpec* spec = preset ? &glue_task(t.task.name) : nullptr;
      for (int b = 0; b < in.B; ++b) {
        if (!std::isfinite(scores[b]))
          api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: scores[{}] = {} is not finite", fn, b,
                   scores[b]);
        if (spec && (scores[b] < spec->target_min || scores[b] > spec->target_max))
          api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: scores[{}] = {} is outside [{}, {}] ({})", fn, b,
                   scores[b], spec->target_min, spec->target_max, t.task.name);
      }
      targets.scores = scores;
    } else {
      require(labels, fn, "labels");
      const int K = int(t.task.labels.size());
      for (int b = 0; b < in.B; ++b)
        if (labels[b] < 0 || labels[b] >= K)
          api_fail(BERTRT_E_INVALID_ARGUMENT,
                   "{}: labels[{}] = {} is outside [0, {}) (the task's labels)", fn, b, labels[b],
                   K);
      targets.labels = labels;
    }
    if (t.trainer->steps_done() >= t.total_steps)
      api_fail(BERTRT_E_STATE, "{}: training is finished ({} of {} steps)", fn,
               t.trainer->steps_done(), t.total_steps);
    std::lock_guard<std::mutex> lock(t.model->forward_mutex);
    StepResult r;
    try {
      r = t.trainer->step(in, targets);
    } catch (const std::exception& e) {
      t.failure = e.what();
      throw;
    }
    int64_t tokens = 0;
    for (int64_t i = 0; i < int64_t(in.B) * in.T; ++i)
      tokens += in.attention_mask ? in.attention_mask[i] : 1;
    const double tps = t.clock.lap(tokens);
    if (metrics)
      *metrics = bertrt_step_metrics{
          t.trainer->steps_done(), t.total_steps, 0,   r.fwd.loss,
          r.learning_rate,         r.grad_norm,   tps, t.clock.elapsed_seconds()};
  });
}

namespace {

// The task's labelled data at data_path, checked as evaluation needs it (BERTRT_E_IO otherwise).
std::unique_ptr<TaskData> evaluable_data(const bertrt_trainer& t, const char* fn,
                                         const char* data_path) {
  require(data_path, fn, "data_path");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(data_path, ec))
    api_fail(BERTRT_E_IO, "{}: data_path {}: {}", fn, data_path, not_a_file_reason(data_path));
  try {
    auto data = load_task_data(t.task, *t.model->loaded.tokenizer, data_path);
    check_evaluable(*data, t.task, data_path);
    return data;
  } catch (const Error& e) {
    api_fail(BERTRT_E_IO, "{}: data_path: {}", fn, e.what());
  }
}

}  // namespace

bertrt_status bertrt_trainer_check_data(bertrt_trainer* trainer, const char* data_path) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_trainer_check_data";
    evaluable_data(trainer_arg(trainer, fn), fn, data_path);
  });
}

bertrt_status bertrt_trainer_evaluate(bertrt_trainer* trainer, const char* data_path, char* json,
                                      size_t capacity, size_t* length) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_trainer_evaluate";
    bertrt_trainer& t = trainer_arg(trainer, fn);
    require(data_path, fn, "data_path");
    require(json, fn, "json");
    if (!t.failure.empty()) check_usable(t, fn);
    const std::unique_ptr<TaskData> data = evaluable_data(t, fn, data_path);
    std::lock_guard<std::mutex> lock(t.model->forward_mutex);
    const TaskMetrics ev =
        data->evaluate(*t.model->loaded.model, *t.model->backend, t.eval_batch_size);
    nlohmann::json j = metrics_json(ev);  // the keys of `bertrt eval --json`
    j["task"] = t.task.name, j["examples"] = ev.examples, j["loss"] = ev.loss;
    if (ev.features != ev.examples) j["features"] = ev.features;
    const std::string text = j.dump();
    if (length) *length = text.size() + 1;
    if (capacity < text.size() + 1)
      api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: capacity {} is too small: the JSON needs {} bytes",
               fn, capacity, text.size() + 1);
    std::memcpy(json, text.c_str(), text.size() + 1);
  });
}

bertrt_status bertrt_trainer_save(bertrt_trainer* trainer, const char* path) {
  return guard(BERTRT_E_IO, [&] {
    const char* fn = "bertrt_trainer_save";
    bertrt_trainer& t = trainer_arg(trainer, fn);
    require(path, fn, "path");
    if (!*path) api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: path is empty", fn);
    check_usable(t, fn);
    std::lock_guard<std::mutex> lock(t.model->forward_mutex);
    save_finetuned_model(path, *t.model->loaded.model, *t.model->loaded.tokenizer, t.metadata,
                         t.qat);
    if (t.qat) t.converted = true;
  });
}

bertrt_status bertrt_check_output(const char* path) {
  return guard(BERTRT_E_IO, [&] {
    require(path, "bertrt_check_output", "path");
    if (!*path) api_fail(BERTRT_E_INVALID_ARGUMENT, "bertrt_check_output: path is empty");
    check_writable(path);
  });
}

}  // extern "C"
