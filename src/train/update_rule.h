// One parameter update from a step's gradient: zero the frozen tensors' gradients, global-norm
// clip (torch or TF rule, by optimizer), the scheduled rate (HF or BERT form, by optimizer), then
// the AdamW step on the trainable tensors. The model-free half of a training step, so it can be
// checked against torch.optim.AdamW + LambdaLR + clip_grad_norm_ and the original BERT optimizer
// on fixed gradients.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "model/params.h"
#include "train/optimizer.h"
#include "train/schedule.h"

namespace bertrt {

struct OptimOptions {
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  float learning_rate = 1e-4f;  // peak rate
  int64_t total_steps = 1;
  int64_t warmup_steps = 0;
  float weight_decay = 0.01f;  // not on LayerNorm weights and biases
  float max_grad_norm = 1.0f;  // ≤ 0 disables clipping
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // kBert: the CLI sets eps 1e-6
  int gradient_accumulation_steps = 1;  // micro-batches per update (Trainer::step)
  bool skip_nonfinite = false;  // a non-finite loss/gradient skips the update instead of failing
  std::string skip_nonfinite_flag;  // the caller's switch for it, named in errors ("" if none)

  ScheduleKind schedule() const {
    return optimizer == OptimizerKind::kBert ? ScheduleKind::kBert : ScheduleKind::kHuggingFace;
  }
  AdamWHyper hyper() const;  // bias_correction off for kBert
};

struct UpdateResult {
  double grad_norm = 0;  // before clipping, over the trainable tensors
  float learning_rate = 0;
  bool applied = false;  // false: the norm was non-finite and nothing changed
};

class UpdateRule {
 public:
  // trainable: one flag per layout.params() entry (empty = all); `layout` must outlive the rule.
  UpdateRule(const ParamLayout& layout, const OptimOptions& options,
             std::vector<bool> trainable = {});

  // The update with index `step` (0-based: the schedule's step) from grads [layout.total()],
  // which it zeroes on frozen tensors and clips in place. When the gradient norm is non-finite
  // it returns applied = false and leaves params and the optimizer state untouched.
  UpdateResult apply(Backend& backend, float* params, float* grads, int64_t step);

  // The floats before the first trainable tensor (frozen embeddings and bottom layers, which the
  // layout puts first): apply() neither reads nor writes their gradient, so a gradient buffer of
  // fresh zero pages that no backward writes there keeps them out of memory on any kernel
  // (reading such a page maps the shared zero page on most, a private one on some VMs).
  size_t frozen_prefix() const { return frozen_prefix_; }

  AdamW& optimizer() { return optimizer_; }
  const AdamW& optimizer() const { return optimizer_; }
  const OptimOptions& options() const { return options_; }
  const std::vector<bool>& trainable() const { return trainable_; }

 private:
  const ParamLayout& layout_;
  OptimOptions options_;
  std::vector<bool> trainable_;
  size_t frozen_prefix_;
  AdamW optimizer_;
};

}  // namespace bertrt
