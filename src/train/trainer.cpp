#include "train/trainer.h"

#include <cmath>

#include "core/error.h"
#include "train/clip.h"
#include "train/schedule.h"

namespace bertrt {

StepClock::StepClock() : start_(std::chrono::steady_clock::now()), last_(start_) {}

double StepClock::lap(int64_t tokens) {
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - last_).count();
  elapsed_ = std::chrono::duration<double>(now - start_).count();
  last_ = now;
  return dt > 0 ? tokens / dt : 0.0;
}

static AdamWHyper hyper_of(const OptimOptions& o) {
  AdamWHyper h;
  h.lr = o.learning_rate;
  h.beta1 = o.beta1, h.beta2 = o.beta2, h.eps = o.eps;
  h.weight_decay = o.weight_decay;
  return h;
}

Trainer::Trainer(BertModel& model, Backend& backend, const OptimOptions& options)
    : model_(model), backend_(backend), options_(options),
      optimizer_(model.layout(), hyper_of(options)) {}

StepResult Trainer::step(const EncoderInputs& inputs, const Targets& targets) {
  StepResult r;
  float* grads = model_.grads();
  const size_t n = model_.layout().total();
  model_.zero_grad();
  r.fwd = model_.forward(backend_, inputs, targets, /*training=*/true);
  if (!std::isfinite(r.fwd.loss))
    fail("step {}: loss is {} (non-finite); lower --learning-rate", steps_done() + 1, r.fwd.loss);
  model_.backward(backend_);
  r.grad_norm = options_.max_grad_norm > 0 ? clip_grad_norm(grads, n, options_.max_grad_norm)
                                           : global_grad_norm(grads, n);
  if (!std::isfinite(r.grad_norm))
    fail("step {}: gradient norm is non-finite", steps_done() + 1);
  r.learning_rate = linear_schedule_lr(options_.learning_rate, steps_done(),
                                       options_.warmup_steps, options_.total_steps);
  optimizer_.step(backend_, model_.params(), grads, r.learning_rate);
  return r;
}

}  // namespace bertrt
