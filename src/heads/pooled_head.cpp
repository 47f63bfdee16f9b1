#include "heads/pooled_head.h"

#include <algorithm>

#include "model/linear.h"

namespace bertrt {

PooledHeadResult pooled_head_forward(Backend& be, PooledHeadActs& a, const float* pooled,
                                     const float* weight, const float* bias,
                                     const int32_t* labels, int B, int C, int K,
                                     float loss_weight) {
  a.logits.assign(size_t(B) * K, 0.0f);
  a.dlogits.assign(size_t(B) * K, 0.0f);
  linear_forward(be, a.logits.data(), pooled, weight, bias, B, C, K);
  PooledHeadResult r;
  if (!labels) return r;
  for (int b = 0; b < B; ++b) {
    if (labels[b] < 0) continue;
    ++r.count;
    const float* row = a.logits.data() + size_t(b) * K;
    r.correct += (std::max_element(row, row + K) - row) == labels[b];
  }
  const float scale = r.count ? loss_weight / r.count : 0.0f;
  const double sum = be.cross_entropy(loss_weight > 0 ? a.dlogits.data() : nullptr,
                                      a.logits.data(), labels, B, K, scale);
  r.loss = r.count ? sum / r.count : 0.0;
  return r;
}

void pooled_head_backward(Backend& be, float* dpooled, float* dweight, float* dbias,
                          const PooledHeadActs& a, const float* pooled, const float* weight,
                          int B, int C, int K) {
  linear_backward(be, dpooled, dweight, dbias, a.dlogits.data(), pooled, weight, B, C, K);
}

}  // namespace bertrt
