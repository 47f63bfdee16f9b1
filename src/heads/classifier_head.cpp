#include "heads/classifier_head.h"

#include "model/linear.h"

namespace bertrt {

void classifier_forward(Backend& be, ClassifierActs& a, const float* inp, const float* weight,
                        const float* bias, const int32_t* labels, int count, int rows, int C, int K,
                        float loss_weight, HeadReadout out, QuantLinear* q) {
  const size_t n = size_t(rows) * K;
  float* logits = a.logits.ensure(be, n);
  float* dlogits = a.dlogits.ensure(be, n);
  linear_forward(be, logits, inp, weight, bias, rows, C, K, 0, q);
  if (!labels) return;
  be.argmax_rows(out.argmax, logits, rows, K);
  const float scale = count ? loss_weight / count : 0.0f;
  be.cross_entropy(loss_weight > 0 ? dlogits : nullptr, out.loss, logits, labels, rows, K, scale);
}

void classifier_backward(Backend& be, float* dinp, float* dweight, float* dbias,
                         const ClassifierActs& a, const float* inp, const float* weight, int rows,
                         int C, int K, QuantLinear* q) {
  linear_backward(be, dinp, dweight, dbias, a.dlogits.data(), inp, weight, rows, C, K, 0, 0, q);
}

}  // namespace bertrt
