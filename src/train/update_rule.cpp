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

UpdateRule::UpdateRule(const ParamLayout& layout, const OptimOptions& options,
                       std::vector<bool> trainable)
    : layout_(layout), options_(options), trainable_(all_or(layout, std::move(trainable))),
      optimizer_(layout, options.hyper(), trainable_) {}

UpdateResult UpdateRule::apply(Backend& backend, float* params, float* grads, int64_t step) {
  // Frozen tensors may still have received gradient (a tied decoder, layers the backward had to
  // cross): they must not count in the norm.
  for (size_t i = 0; i < layout_.params().size(); ++i)
    if (!trainable_[i]) {
      const ParamInfo& p = layout_.params()[i];
      backend.fill(grads + p.offset, 0.0f, p.numel);
    }
  UpdateResult r;
  const size_t n = layout_.total();
  if (options_.max_grad_norm > 0)
    r.grad_norm = options_.optimizer == OptimizerKind::kBert
                      ? clip_grad_norm_tf(backend, grads, n, options_.max_grad_norm)
                      : clip_grad_norm(backend, grads, n, options_.max_grad_norm);
  else
    r.grad_norm = global_grad_norm(backend, grads, n);
  r.learning_rate = schedule_lr(options_.schedule(), options_.learning_rate, step,
                                options_.warmup_steps, options_.total_steps);
  if (!std::isfinite(r.grad_norm)) return r;
  optimizer_.step(backend, params, grads, r.learning_rate);
  r.applied = true;
  return r;
}

}  // namespace bertrt
