#include "heads/classifier_head.h"

#include <algorithm>

#include "core/error.h"
#include "model/linear.h"

namespace bertrt {

HeadResult classifier_forward(Backend& be, ClassifierActs& a, const float* inp, const float* weight,
                              const float* bias, const int32_t* labels, int rows, int C, int K,
                              float loss_weight, QuantLinear* q) {
  a.logits.assign(size_t(rows) * K, 0.0f);
  a.dlogits.assign(size_t(rows) * K, 0.0f);
  linear_forward(be, a.logits.data(), inp, weight, bias, rows, C, K, 0, q);
  HeadResult r;
  if (!labels) return r;
  for (int i = 0; i < rows; ++i) {
    if (labels[i] < 0) continue;
    // The cross-entropy op would read past the row; the data readers map labels, so this is a bug.
    if (labels[i] >= K) fail("classifier: label {} at row {} is outside [0, {})", labels[i], i, K);
    ++r.count;
    const float* row = a.logits.data() + size_t(i) * K;
    r.correct += (std::max_element(row, row + K) - row) == labels[i];
  }
  const float scale = r.count ? loss_weight / r.count : 0.0f;
  const double sum = be.cross_entropy(loss_weight > 0 ? a.dlogits.data() : nullptr, a.logits.data(),
                                      labels, rows, K, scale);
  r.loss = r.count ? sum / r.count : 0.0;
  return r;
}

void classifier_backward(Backend& be, float* dinp, float* dweight, float* dbias,
                         const ClassifierActs& a, const float* inp, const float* weight, int rows,
                         int C, int K, QuantLinear* q) {
  linear_backward(be, dinp, dweight, dbias, a.dlogits.data(), inp, weight, rows, C, K, 0, 0, q);
}

}  // namespace bertrt
