#include "model/attention.h"

#include <cmath>

namespace bertrt {

void attention_forward(Backend& be, float* ctx, float* probs, float* scores, const float* q,
                       const float* k, const float* v, const float* mask_add,
                       const AttentionDims& d, ProbsDropout drop) {
  const int T = d.T, C = d.C(), HS = d.HS;
  const int64_t TT = static_cast<int64_t>(T) * T;
  const size_t n = size_t(d.B) * d.NH * TT;
  for (int b = 0; b < d.B; ++b) {
    const int64_t x = static_cast<int64_t>(b) * T * C;  // [b, 0, 0] of a [B, T, C] tensor
    // scores[b, h] = Q_bh · K_bhᵀ   [T, T]
    be.gemm_batched(d.NH, false, true, T, T, HS, 1.0f, q + x, C, HS, k + x, C, HS, 0.0f,
                    scores + b * d.NH * TT, T, TT);
  }
  be.softmax_forward(probs, scores, mask_add, d.B, d.NH, T, 1.0f / std::sqrt(float(HS)));
  const float* p = probs;
  if (drop.p > 0.0f) {  // the scores are spent: they take the dropped copy
    be.copy(scores, probs, n * sizeof(float));
    be.dropout(scores, n, drop.p, drop.seed);
    p = scores;
  }
  for (int b = 0; b < d.B; ++b) {
    const int64_t x = static_cast<int64_t>(b) * T * C;
    // ctx_bh = dropout(probs)_bh · V_bh   [T, HS]
    be.gemm_batched(d.NH, false, false, T, HS, T, 1.0f, p + b * d.NH * TT, T, TT, v + x, C, HS,
                    0.0f, ctx + x, C, HS);
  }
}

void attention_backward(Backend& be, float* dq, float* dk, float* dv, float* dprobs, float* dscores,
                        const float* dctx, const float* q, const float* k, const float* v,
                        const float* probs, const AttentionDims& d, ProbsDropout drop) {
  const int T = d.T, C = d.C(), HS = d.HS;
  const int64_t TT = static_cast<int64_t>(T) * T;
  const size_t n = size_t(d.B) * d.NH * TT;
  // With dropout, V saw the dropped probabilities: redraw them into dscores (scratch until the
  // softmax backward) for dV, and pass dprobs through the same mask.
  const float* p = probs;
  if (drop.p > 0.0f) {
    be.copy(dscores, probs, n * sizeof(float));
    be.dropout(dscores, n, drop.p, drop.seed);
    p = dscores;
  }
  for (int b = 0; b < d.B; ++b) {
    const int64_t x = static_cast<int64_t>(b) * T * C;
    const int64_t y = b * d.NH * TT;
    // dprobs_bh = dctx_bh · V_bhᵀ ;  dV_bh += dropout(probs)_bhᵀ · dctx_bh
    be.gemm_batched(d.NH, false, true, T, T, HS, 1.0f, dctx + x, C, HS, v + x, C, HS, 0.0f,
                    dprobs + y, T, TT);
    be.gemm_batched(d.NH, true, false, T, HS, T, 1.0f, p + y, T, TT, dctx + x, C, HS, 1.0f, dv + x,
                    C, HS);
  }
  if (drop.p > 0.0f) be.dropout(dprobs, n, drop.p, drop.seed);
  be.fill(dscores, 0.0f, n);
  be.softmax_backward(dscores, probs, dprobs, d.B * d.NH * T, T, 1.0f / std::sqrt(float(HS)));
  for (int b = 0; b < d.B; ++b) {
    const int64_t x = static_cast<int64_t>(b) * T * C;
    const int64_t y = b * d.NH * TT;
    // dQ_bh += dscores_bh · K_bh ;  dK_bh += dscores_bhᵀ · Q_bh
    be.gemm_batched(d.NH, false, false, T, HS, T, 1.0f, dscores + y, T, TT, k + x, C, HS, 1.0f,
                    dq + x, C, HS);
    be.gemm_batched(d.NH, true, false, T, HS, T, 1.0f, dscores + y, T, TT, q + x, C, HS, 1.0f,
                    dk + x, C, HS);
  }
}

}  // namespace bertrt
