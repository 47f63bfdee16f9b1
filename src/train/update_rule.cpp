#include "train/update_rule.h"

#include <algorithm>
#include <cmath>

#include "train/clip.h"

namespace bertrt {

AdamWHyper OptimOptions::hyper() const {
  AdamWHyper h;
  h.lr = learning_rate;
  h.beta1 = beta1, h.beta2 = beta2, h.eps = eps;
  h.weight_decay = weight_decay;
  h.bias_correction = optimizer != OptimizerKind::kBert;
  return h;
}

static std::vector<bool> all_or(const ParamLayout& layout, std::vector<bool> trainable) {
  if (trainable.empty()) trainable.assign(layout.params().size(), true);
  return trainable;
}

// Where the first trainable tensor starts (layout.total() when none is).
static size_t leading_frozen(const ParamLayout& layout, const std::vector<bool>& trainable) {
  for (size_t i = 0; i < layout.params().size(); ++i)
    if (trainable[i]) return layout.params()[i].offset;
  return layout.total();
}

UpdateRule::UpdateRule(const ParamLayout& layout, const OptimOptions& options,
                       std::vector<bool> trainable)
    : layout_(layout), options_(options), trainable_(all_or(layout, std::move(trainable))),
      frozen_prefix_(leading_frozen(layout_, trainable_)),
      optimizer_(layout, options.hyper(), trainable_) {}

UpdateResult UpdateRule::apply(Backend& backend, float* params, float* grads, int64_t step) {
  // Frozen tensors may still have received gradient (layers the backward had to cross): they must
  // not count in the norm. The leading ones are left out instead, unread and unwritten.
  for (size_t i = 0; i < layout_.params().size(); ++i)
    if (!trainable_[i] && layout_.params()[i].offset >= frozen_prefix_) {
      const ParamInfo& p = layout_.params()[i];
      backend.fill(grads + p.offset, 0.0f, p.numel);
    }
  UpdateResult r;
  float* g = grads + frozen_prefix_;
  const size_t n = layout_.total() - frozen_prefix_;
  if (options_.max_grad_norm > 0)
    r.grad_norm = options_.optimizer == OptimizerKind::kBert
                      ? clip_grad_norm_tf(backend, g, n, options_.max_grad_norm)
                      : clip_grad_norm(backend, g, n, options_.max_grad_norm);
  else
    r.grad_norm = global_grad_norm(backend, g, n);
  r.learning_rate = schedule_lr(options_.schedule(), options_.learning_rate, step,
                                options_.warmup_steps, options_.total_steps);
  if (!std::isfinite(r.grad_norm)) return r;
  optimizer_.step(backend, params, grads, r.learning_rate);
  r.applied = true;
  return r;
}

}  // namespace bertrt
