#include "heads/regression_head.h"

#include "model/linear.h"

namespace bertrt {

void regression_forward(Backend& be, ClassifierActs& a, const float* pooled, const float* weight,
                        const float* bias, const float* targets, int B, int C, float loss_weight,
                        double* loss_sum, QuantLinear* q) {
  float* scores = a.logits.ensure(be, size_t(B));
  float* dscores = a.dlogits.ensure(be, size_t(B));
  linear_forward(be, scores, pooled, weight, bias, B, C, 1, 0, q);
  if (!targets || B == 0) return;
  be.mse_loss(dscores, loss_sum, scores, targets, B, loss_weight);
}

HeadResult regression_result(double loss_sum, int B) {
  HeadResult r;
  if (B == 0) return r;
  r.loss = loss_sum / B;
  r.count = B;
  return r;
}

void regression_backward(Backend& be, float* dpooled, float* dweight, float* dbias,
                         const ClassifierActs& a, const float* pooled, const float* weight, int B,
                         int C, QuantLinear* q) {
  linear_backward(be, dpooled, dweight, dbias, a.dlogits.data(), pooled, weight, B, C, 1, 0, 0, q);
}

}  // namespace bertrt
