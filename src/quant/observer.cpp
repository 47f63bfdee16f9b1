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
  range_.assign(2, 0.0f);
}

void ActivationObserver::observe(Backend& be, const float* batch, int parts) {
  if (frozen_) return;
  be.observe_min_max(range_.on(be), batch, parts, updates_ == 0, momentum_);
  ++updates_;
}

void ActivationObserver::observe(float batch_min, float batch_max) {
  if (frozen_) return;
  if (!std::isfinite(batch_min) || !std::isfinite(batch_max) || batch_min > batch_max)
    fail("activation observer: batch range [{}, {}] is not finite (NaN or Inf in the activations?)",
         batch_min, batch_max);
  float* r = range_.host();
  if (updates_ == 0) {
    r[0] = batch_min;
    r[1] = batch_max;
  } else {
    r[0] = r[0] + mul_rounded(momentum_, batch_min - r[0]);
    r[1] = r[1] + mul_rounded(momentum_, batch_max - r[1]);
  }
  ++updates_;
}

QParams ActivationObserver::qparams() const {
  if (updates_ == 0) return QParams{};
  return affine_qparams(min(), max(), kActQMin, kActQMax);
}

void ActivationObserver::restore(float min_val, float max_val, int64_t updates, bool frozen) {
  if (updates < 0 || (updates > 0 && (!std::isfinite(min_val) || !std::isfinite(max_val) ||
                                       min_val > max_val)))
    fail("activation observer state: range [{}, {}] after {} updates is not valid", min_val,
         max_val, updates);
  range_.assign(2, 0.0f);
  range_.host()[0] = min_val;
  range_.host()[1] = max_val;
  updates_ = updates;
  frozen_ = frozen;
}

}  // namespace bertrt
