#include "heads/mlm_head.h"

#include <algorithm>

#include "model/linear.h"

namespace bertrt {

void MlmActs::resize(int P_, int C, int V) {
  if (P_ <= capacity_ && C == C_ && V == V_) {  // P varies per batch: keep the larger buffers
    P = P_;
    return;
  }
  const size_t PC = size_t(P_) * C, PV = size_t(P_) * V;
  for (int pass = 0; pass < 2; ++pass) {
    Carver cv(pass ? buf_.data() : nullptr);
    gathered = cv.take(PC), dense = cv.take(PC), act = cv.take(PC), ln = cv.take(PC);
    mean = cv.take(P_), rstd = cv.take(P_), logits = cv.take(PV), dlogits = cv.take(PV);
    dln = cv.take(PC), dact = cv.take(PC), ddense = cv.take(PC), dgathered = cv.take(PC);
    if (!pass) buf_ = FloatBuffer(cv.used());
  }
  P = capacity_ = P_, C_ = C, V_ = V;
}

MlmResult mlm_forward(Backend& be, const BertConfig& c, const BertParams& w, MlmActs& a,
                      const float* hidden, const int32_t* positions, const int32_t* labels, int P,
                      float loss_weight, QuantLinear* dense_q, QuantLinear* decoder_q) {
  const int C = c.hidden_size, V = c.vocab_size;
  a.resize(P, C, V);
  for (int p = 0; p < P; ++p)
    std::copy(hidden + size_t(positions[p]) * C, hidden + size_t(positions[p] + 1) * C,
              a.gathered + size_t(p) * C);
  linear_forward(be, a.dense, a.gathered, w.mlm_dense_w, w.mlm_dense_b, P, C, C, 0, dense_q);
  be.gelu_forward(a.act, a.dense, size_t(P) * C, c.gelu());
  be.layernorm_forward(a.ln, a.mean, a.rstd, a.act, w.mlm_ln_w, w.mlm_ln_b, P, C,
                       c.layer_norm_eps);
  linear_forward(be, a.logits, a.ln, w.word_emb, w.mlm_bias, P, C, V, 0,
                 decoder_q);  // tied decoder
  MlmResult r;
  if (!labels) return r;
  for (int p = 0; p < P; ++p) {
    if (labels[p] < 0) continue;
    ++r.count;
    const float* row = a.logits + size_t(p) * V;
    r.correct += (std::max_element(row, row + V) - row) == labels[p];
  }
  const float scale = r.count ? loss_weight / r.count : 0.0f;
  const double sum = be.cross_entropy(loss_weight > 0 ? a.dlogits : nullptr, a.logits, labels, P,
                                      V, scale);
  r.loss = r.count ? sum / r.count : 0.0;
  return r;
}

void mlm_backward(Backend& be, const BertConfig& c, const BertParams& dw, MlmActs& a,
                  float* dhidden, const BertParams& w, const int32_t* positions,
                  QuantLinear* dense_q, QuantLinear* decoder_q) {
  const int P = a.P, C = c.hidden_size, V = c.vocab_size;
  const size_t PC = size_t(P) * C;
  std::fill(a.dln, a.dln + PC, 0.0f);
  linear_backward(be, a.dln, dw.word_emb, dw.mlm_bias, a.dlogits, a.ln, w.word_emb, P, C, V, 0,
                  0, decoder_q);
  std::fill(a.dact, a.dact + PC, 0.0f);
  be.layernorm_backward(a.dact, dw.mlm_ln_w, dw.mlm_ln_b, a.dln, a.act, w.mlm_ln_w, a.mean,
                        a.rstd, P, C);
  std::fill(a.ddense, a.ddense + PC, 0.0f);
  be.gelu_backward(a.ddense, a.dense, a.dact, PC, c.gelu());
  std::fill(a.dgathered, a.dgathered + PC, 0.0f);
  linear_backward(be, a.dgathered, dw.mlm_dense_w, dw.mlm_dense_b, a.ddense, a.gathered,
                  w.mlm_dense_w, P, C, C, 0, 0, dense_q);
  for (int p = 0; p < P; ++p) {  // scatter back; a position may appear once per sequence
    float* dst = dhidden + size_t(positions[p]) * C;
    const float* src = a.dgathered + size_t(p) * C;
    for (int i = 0; i < C; ++i) dst[i] += src[i];
  }
}

}  // namespace bertrt
