#include "quant/observer.h"

#include <cmath>

#include "core/error.h"

namespace bertrt {
namespace {

// c·d rounded to float on its own. GCC contracts a·b + c into an FMA across statements on
// targets that have one (aarch64, -ffp-contract=fast); torch rounds the product first.
float mul_rounded(float a, float b) {
  volatile float p = a * b;
  return p;
}

}  // namespace

ActivationObserver::ActivationObserver(float momentum) : momentum_(momentum) {
  if (!(momentum > 0.0f && momentum <= 1.0f))
    fail("observer momentum {}: expected a value in (0, 1]", momentum);
}

void ActivationObserver::observe(float batch_min, float batch_max) {
  if (frozen_) return;
  if (!std::isfinite(batch_min) || !std::isfinite(batch_max) || batch_min > batch_max)
    fail("activation observer: batch range [{}, {}] is not finite (NaN or Inf in the activations?)",
         batch_min, batch_max);
  if (updates_ == 0) {
    min_ = batch_min;
    max_ = batch_max;
  } else {
    min_ = min_ + mul_rounded(momentum_, batch_min - min_);
    max_ = max_ + mul_rounded(momentum_, batch_max - max_);
  }
  ++updates_;
}

QParams ActivationObserver::qparams() const {
  if (updates_ == 0) return QParams{};
  return affine_qparams(min_, max_, kActQMin, kActQMax);
}

void ActivationObserver::restore(float min_val, float max_val, int64_t updates, bool frozen) {
  if (updates < 0 || (updates > 0 && (!std::isfinite(min_val) || !std::isfinite(max_val) ||
                                       min_val > max_val)))
    fail("activation observer state: range [{}, {}] after {} updates is not valid", min_val,
         max_val, updates);
  min_ = min_val;
  max_ = max_val;
  updates_ = updates;
  frozen_ = frozen;
}

}  // namespace bertrt
