// One optimizer step of the BERT recipe: forward → backward over K micro-batches (gradient
// accumulation) → global-norm clip → AdamW (or the original BERT optimizer) at the scheduled
// rate. Data loops (pre-training, fine-tuning) call step() per batch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/bert_model.h"
#include "train/update_rule.h"

namespace bertrt {

// Memory options of training on small devices.
struct MemoryOptions {
  bool freeze_embeddings = false;  // bert.embeddings.* (and so the tied MLM decoder) stay fixed
  int freeze_layers = 0;           // encoder layers 0..K−1 stay fixed
  bool recompute = false;          // activation recomputation (encoder.h BackwardPlan)
};

struct StepResult {
  // Over the step's micro-batches: loss, mlm.loss and nsp.loss are the MEANS of the micro-batch
  // values (each micro-batch's MLM loss is the mean over its own masked positions); counts and
  // correct predictions are sums.
  ForwardResult fwd;
  double grad_norm = 0;  // before clipping (NaN when the loss was already non-finite)
  float learning_rate = 0;
  bool skipped = false;  // --skip-nonfinite: non-finite loss or gradient, no update
};

// One micro-batch: the model inputs and the heads' targets.
struct MicroBatch {
  EncoderInputs inputs;
  Targets targets;
};

// Wall-clock bookkeeping of a training loop: tokens/s of the last step and time since start.
class StepClock {
 public:
  StepClock();
  // Call once per step with the step's non-padding tokens; returns tokens per second.
  double lap(int64_t tokens);
  double elapsed_seconds() const { return elapsed_; }

 private:
  std::chrono::steady_clock::time_point start_, last_;
  double elapsed_ = 0;
};

// A step that met a non-finite loss, gradient or update and stopped the run (Trainer::step):
// the same flags meet it again, so callers do not offer --resume as the way on.
struct NonFiniteError : Error {
  // True when the weights before the step gave it (a non-finite loss or gradient); false when
  // the update itself overflowed them.
  bool from_weights = true;
  NonFiniteError(const std::string& what, bool from_weights)
      : Error(what), from_weights(from_weights) {}
};

class Trainer {
 public:
  // Throws bertrt::Error when memory.freeze_layers is outside [0, num_hidden_layers].
  Trainer(BertModel& model, Backend& backend, const OptimOptions& options,
          const MemoryOptions& memory = {});

  // One update from one batch.
  StepResult step(const EncoderInputs& inputs, const Targets& targets);
  // One update from micro.size() micro-batches: their gradients are summed and scaled by
  // 1/micro.size(), which is Hugging Face Trainer's (loss / gradient_accumulation_steps).backward()
  // per micro-batch (exactly so when the count is a power of two; otherwise up to float rounding).
  // A non-finite loss or gradient norm throws bertrt::Error naming the step, before any update;
  // with options.skip_nonfinite the step is counted but skipped (StepResult::skipped).
  StepResult step(const std::vector<MicroBatch>& micro);
  // One update from a loss the model's heads do not compute (train/embedding_trainer.h): the
  // gradients are zeroed, `run` does the forwards and backwards (model().forward with training,
  // backward or backward_from_hidden) and returns the loss; then clip and update as step().
  StepResult step_with(const std::function<double()>& run);

  // Dropout of every training forward from now on (encoder.h Dropout): hidden `prob` and
  // `attention_probs` in [0, 1), 0 = none (the defaults). Each micro-batch of each step draws its
  // own masks from (seed, step, micro-batch), so a resumed run draws the masks of the
  // uninterrupted one.
  void set_dropout(float prob, uint64_t seed, float attention_probs = 0.0f);
  float dropout() const { return dropout_prob_; }
  float attention_probs_dropout() const { return attention_probs_dropout_; }
  int64_t steps_done() const { return steps_; }           // skipped steps included
  int64_t skipped_steps() const { return skipped_; }
  const OptimOptions& options() const { return rule_.options(); }
  const MemoryOptions& memory() const { return memory_; }
  const std::vector<bool>& trainable() const { return rule_.trainable(); }
  AdamW& optimizer() { return rule_.optimizer(); }
  const AdamW& optimizer() const { return rule_.optimizer(); }
  const BertModel& model() const { return model_; }
  // Counters of a checkpoint (train/checkpoint.h); the moments go through optimizer().set_state.
  void restore_counters(int64_t steps_done, int64_t skipped_steps);

 private:
  StepResult nonfinite(StepResult r, const std::string& what);
  StepResult update(StepResult r, size_t skip, size_t n);  // clip, AdamW, the checks
  BertModel& model_;
  Backend& backend_;
  MemoryOptions memory_;
  UpdateRule rule_;
  int64_t steps_ = 0, skipped_ = 0;
  float dropout_prob_ = 0.0f, attention_probs_dropout_ = 0.0f;
  uint64_t dropout_seed_ = 0;
};

// One flag per model.layout().params() entry: false for the tensors `memory` freezes.
std::vector<bool> trainable_params(const BertModel& model, const MemoryOptions& memory);

}  // namespace bertrt
