#include "train/trainer.h"

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace bertrt {

StepClock::StepClock() : start_(std::chrono::steady_clock::now()), last_(start_) {}

double StepClock::lap(int64_t tokens) {
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - last_).count();
  elapsed_ = std::chrono::duration<double>(now - start_).count();
  last_ = now;
  return dt > 0 ? tokens / dt : 0.0;
}

static bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Checked before anything loops over the layers (a huge K must fail at once, not after K steps).
static void check_memory(const BertModel& model, const MemoryOptions& m) {
  const int L = model.config().num_hidden_layers;
  if (model.lora() && (m.freeze_embeddings || m.freeze_layers > 0))
    fail("--freeze-embeddings/--freeze-layers with LoRA adapters: the adapters already freeze the "
         "whole base");
  if (m.freeze_layers < 0 || m.freeze_layers > L)
    fail("--freeze-layers {}: the model has {} encoder layers", m.freeze_layers, L);
}

std::vector<bool> trainable_params(const BertModel& model, const MemoryOptions& memory) {
  check_memory(model, memory);
  std::vector<std::string> frozen_prefixes;
  if (memory.freeze_embeddings) frozen_prefixes.push_back("bert.embeddings.");
  for (int l = 0; l < memory.freeze_layers; ++l)
    frozen_prefixes.push_back(fmt::format("bert.encoder.layer.{}.", l));
  std::vector<bool> out;
  if (model.lora()) {  // the adapters and the head (PEFT's modules_to_save); the base is frozen
    for (const ParamInfo& p : model.layout().params()) out.push_back(!model.is_base_param(p.name));
    return out;
  }
  for (const ParamInfo& p : model.layout().params()) {
    bool frozen = false;
    for (const std::string& prefix : frozen_prefixes) frozen = frozen || starts_with(p.name, prefix);
    out.push_back(!frozen);
  }
  return out;
}

static const BertModel& with_plan(BertModel& model, const MemoryOptions& m) {
  check_memory(model, m);
  BackwardPlan plan;
  // Nothing below the first trainable layer needs a gradient only when the embeddings are frozen
  // too; otherwise the backward must cross the frozen layers to reach them.
  plan.embeddings = !m.freeze_embeddings;
  plan.first_layer = m.freeze_embeddings ? m.freeze_layers : 0;
  // Adapters: every layer's backward runs (for dX, down to the lowest adapter), the embeddings'
  // does not.
  if (model.lora()) plan.embeddings = false, plan.first_layer = 0;
  plan.recompute = m.recompute;
  model.set_backward_plan(plan);
  return model;
}

Trainer::Trainer(BertModel& model, Backend& backend, const OptimOptions& options,
                 const MemoryOptions& memory)
    : model_(model), backend_(backend), memory_(memory),
      rule_(with_plan(model, memory).layout(), options, trainable_params(model, memory)) {
  backend_.prefer_memory(memory.recompute);  // --recompute trades speed for memory
}

void Trainer::set_dropout(float prob, uint64_t seed, float attention_probs) {
  if (!(prob >= 0.0f && prob < 1.0f)) fail("hidden dropout probability {} is outside [0, 1)", prob);
  if (!(attention_probs >= 0.0f && attention_probs < 1.0f))
    fail("attention-probabilities dropout probability {} is outside [0, 1)", attention_probs);
  if ((prob > 0.0f || attention_probs > 0.0f) && !backend_.supports(Op::kDropout))
    fail(
        "hidden dropout {}, attention-probabilities dropout {}: the {} backend has no dropout "
        "op; train with both at 0 on it",
        prob, attention_probs, backend_.name());
  dropout_prob_ = prob;
  attention_probs_dropout_ = attention_probs;
  dropout_seed_ = seed;
}

StepResult Trainer::step(const EncoderInputs& inputs, const Targets& targets) {
  return step(std::vector<MicroBatch>{MicroBatch{inputs, targets}});
}

// Means of the micro-batch losses, sums of the counts.
static void accumulate(ForwardResult& sum, const ForwardResult& f, double w) {
  sum.loss += w * f.loss;
  sum.mlm.loss += w * f.mlm.loss, sum.mlm.count += f.mlm.count, sum.mlm.correct += f.mlm.correct;
  sum.nsp.loss += w * f.nsp.loss, sum.nsp.count += f.nsp.count, sum.nsp.correct += f.nsp.correct;
  sum.cls.loss += w * f.cls.loss, sum.cls.count += f.cls.count, sum.cls.correct += f.cls.correct;
}

StepResult Trainer::nonfinite(StepResult r, const std::string& what) {
  if (!rule_.options().skip_nonfinite)
    throw NonFiniteError(
        fmt::format("step {}: {} (non-finite); no update was made — lower the learning rate{}",
                    steps_ + 1, what,
                    rule_.options().skip_nonfinite_flag.empty()
                        ? ""
                        : fmt::format(", or pass {} to skip such steps",
                                      rule_.options().skip_nonfinite_flag)),
        /*from_weights=*/true);
  r.skipped = true;
  ++steps_, ++skipped_;
  return r;
}

StepResult Trainer::step(const std::vector<MicroBatch>& micro) {
  if (micro.empty()) fail("a training step needs at least one micro-batch");
  StepResult r;
  // The frozen prefix's gradient is neither written (BackwardPlan: frozen embeddings stop the
  // backward at the first trainable layer) nor read (UpdateRule): its pages are never touched.
  const size_t skip = rule_.frozen_prefix(), n = model_.layout().total() - skip;
  backend_.fill(model_.grads(backend_) + skip, 0.0f, n);
  const double w = 1.0 / double(micro.size());
  for (size_t m = 0; m < micro.size(); ++m) {
    const MicroBatch& mb = micro[m];
    // The draw numbers steps and their micro-batches apart (2^16 micro-batches a step).
    model_.set_dropout(
        {dropout_prob_, dropout_seed_, uint64_t(steps_) << 16 | m, attention_probs_dropout_});
    const ForwardResult f = model_.forward(backend_, mb.inputs, mb.targets, /*training=*/true);
    accumulate(r.fwd, f, w);
    if (!std::isfinite(f.loss)) {
      r.grad_norm = NAN;
      r.learning_rate = schedule_lr(rule_.options().schedule(), rule_.options().learning_rate,
                                    steps_, rule_.options().warmup_steps,
                                    rule_.options().total_steps);
      // "nan" whatever its sign bit (fmt prints "-nan"): the message is matched by people and docs.
      return nonfinite(
          r, std::isnan(f.loss) ? std::string("loss is nan") : fmt::format("loss is {}", f.loss));
    }
    model_.backward(backend_);
  }
  float* grads = model_.grads(backend_);
  // The mean over micro-batches (a power-of-two K scales exactly).
  if (micro.size() > 1) backend_.scale(grads + skip, static_cast<float>(w), n);
  return update(r, skip, n);
}

StepResult Trainer::step_with(const std::function<double()>& run) {
  StepResult r;
  const size_t skip = rule_.frozen_prefix(), n = model_.layout().total() - skip;
  backend_.fill(model_.grads(backend_) + skip, 0.0f, n);
  model_.set_dropout({dropout_prob_, dropout_seed_, uint64_t(steps_) << 16, attention_probs_dropout_});
  r.fwd.loss = run();
  if (!std::isfinite(r.fwd.loss)) {
    r.grad_norm = NAN;
    r.learning_rate = schedule_lr(rule_.options().schedule(), rule_.options().learning_rate, steps_,
                                  rule_.options().warmup_steps, rule_.options().total_steps);
    return nonfinite(r, std::isnan(r.fwd.loss) ? std::string("loss is nan")
                                               : fmt::format("loss is {}", r.fwd.loss));
  }
  return update(r, skip, n);
}

StepResult Trainer::update(StepResult r, size_t skip, size_t n) {
  float* grads = model_.grads(backend_);
  const UpdateResult u = rule_.apply(backend_, model_.params(backend_), grads, steps_);
  r.grad_norm = u.grad_norm;
  r.learning_rate = u.learning_rate;
  if (!u.applied) return nonfinite(r, fmt::format("gradient norm is {}", u.grad_norm));
  // A finite gradient can still overflow the parameters (a huge learning rate). Every later step
  // would then be skipped, and the run would end "well" with a broken model; a skipped step
  // cannot undo an update, so where skipping is on, a pass over the parameters checks it.
  if (rule_.options().skip_nonfinite) {
    double ss = 0;
    backend_.sum_squares(&ss, model_.params(backend_) + skip, n);
    if (!std::isfinite(ss))
      throw NonFiniteError(
          fmt::format(
              "step {}: the update made the parameters non-finite (gradient norm {}, learning rate "
              "{}); skipping cannot undo an update — lower the learning rate",
              steps_ + 1, u.grad_norm, u.learning_rate),
          /*from_weights=*/false);
  }
  ++steps_;
  return r;
}

void Trainer::restore_counters(int64_t steps_done, int64_t skipped_steps) {
  if (steps_done < 0 || skipped_steps < 0 || skipped_steps > steps_done)
    fail("training state: {} steps with {} skipped is inconsistent", steps_done, skipped_steps);
  steps_ = steps_done;
  skipped_ = skipped_steps;
}

}  // namespace bertrt
