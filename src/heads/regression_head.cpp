#include "heads/regression_head.h"

#include "model/linear.h"

namespace bertrt {

HeadResult regression_forward(Backend& be, ClassifierActs& a, const float* pooled,
                              const float* weight, const float* bias, const float* targets, int B,
                              int C, float loss_weight, QuantLinear* q) {
  a.logits.assign(size_t(B), 0.0f);
  a.dlogits.assign(size_t(B), 0.0f);
  linear_forward(be, a.logits.data(), pooled, weight, bias, B, C, 1, 0, q);
  HeadResult r;
  if (!targets || B == 0) return r;
  double sum = 0;
  for (int b = 0; b < B; ++b) {
    const double diff = double(a.logits[b]) - targets[b];
    sum += diff * diff;
    a.dlogits[b] = float(loss_weight * 2.0 * diff / B);  // ∂/∂score_b of mean (score − target)²
  }
  r.loss = sum / B;
  r.count = B;
  return r;
}

void regression_backward(Backend& be, float* dpooled, float* dweight, float* dbias,
                         const ClassifierActs& a, const float* pooled, const float* weight, int B,
                         int C, QuantLinear* q) {
  linear_backward(be, dpooled, dweight, dbias, a.dlogits.data(), pooled, weight, B, C, 1, 0, 0, q);
}

}  // namespace bertrt
