// One optimizer step of the BERT recipe: forward → backward → global-norm clip → AdamW with the
// linear warm-up/decay rate. Data loops (pre-training, fine-tuning) call step() per batch.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "model/bert_model.h"
#include "train/optimizer.h"

namespace bertrt {

struct OptimOptions {
  float learning_rate = 1e-4f;
  int64_t total_steps = 1;
  int64_t warmup_steps = 0;
  float weight_decay = 0.01f;  // not on LayerNorm weights and biases
  float max_grad_norm = 1.0f;  // ≤ 0 disables clipping
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
};

struct StepResult {
  ForwardResult fwd;
  double grad_norm = 0;  // before clipping
  float learning_rate = 0;
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

class Trainer {
 public:
  Trainer(BertModel& model, Backend& backend, const OptimOptions& options);
  StepResult step(const EncoderInputs& inputs, const Targets& targets);
  int64_t steps_done() const { return optimizer_.step_count(); }
  AdamW& optimizer() { return optimizer_; }

 private:
  BertModel& model_;
  Backend& backend_;
  OptimOptions options_;
  AdamW optimizer_;
};

}  // namespace bertrt
