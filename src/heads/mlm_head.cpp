#include "heads/mlm_head.h"

#include "model/linear.h"

namespace bertrt {

void MlmActs::resize(Backend& be, int P_, int C, int V) {
  // P varies per batch: keep the larger buffers.
  if (P_ <= capacity_ && C == C_ && V == V_ && buf_.backend() == &be) {
    P = P_;
    return;
  }
  const size_t PC = size_t(P_) * C, PV = size_t(P_) * V;
  for (int pass = 0; pass < 2; ++pass) {
    Carver cv(pass ? buf_.data() : nullptr);
    gathered = cv.take(PC), dense = cv.take(PC), act = cv.take(PC), ln = cv.take(PC);
    mean = cv.take(P_), rstd = cv.take(P_), logits = dlogits = cv.take(PV);  // in place
    dln = cv.take(PC), dact = cv.take(PC), ddense = cv.take(PC), dgathered = cv.take(PC);
    if (!pass) buf_.ensure(be, cv.used());
  }
  P = capacity_ = P_, C_ = C, V_ = V;
}

void mlm_forward(Backend& be, const BertConfig& c, const BertParams& w, MlmActs& a,
                 const float* hidden, const int32_t* positions, const int32_t* labels, int count,
                 int P, float loss_weight, HeadReadout out, QuantLinear* dense_q,
                 QuantLinear* decoder_q) {
  const int C = c.hidden_size, V = c.vocab_size;
  a.resize(be, P, C, V);
  be.gather_rows(a.gathered, hidden, positions, P, C);
  linear_forward(be, a.dense, a.gathered, w.mlm_dense_w, w.mlm_dense_b, P, C, C, 0, dense_q);
  be.gelu_forward(a.act, a.dense, size_t(P) * C, c.gelu());
  be.layernorm_forward(a.ln, a.mean, a.rstd, a.act, w.mlm_ln_w, w.mlm_ln_b, P, C,
                       c.layer_norm_eps);
  linear_forward(be, a.logits, a.ln, w.word_emb, w.mlm_bias, P, C, V, 0,
                 decoder_q);  // tied decoder
  if (!labels) return;
  be.argmax_rows(out.argmax, a.logits, P, V);
  const float scale = count ? loss_weight / count : 0.0f;
  be.cross_entropy(loss_weight > 0 ? a.dlogits : nullptr, out.loss, a.logits, labels, P, V, scale);
}

void mlm_backward(Backend& be, const BertConfig& c, const BertParams& dw, MlmActs& a,
                  float* dhidden, const BertParams& w, const int32_t* positions,
                  QuantLinear* dense_q, QuantLinear* decoder_q) {
  const int P = a.P, C = c.hidden_size, V = c.vocab_size;
  const size_t PC = size_t(P) * C;
  be.fill(a.dln, 0.0f, PC);
  linear_backward(be, a.dln, dw.word_emb, dw.mlm_bias, a.dlogits, a.ln, w.word_emb, P, C, V, 0,
                  0, decoder_q);
  be.fill(a.dact, 0.0f, PC);
  be.layernorm_backward(a.dact, dw.mlm_ln_w, dw.mlm_ln_b, a.dln, a.act, w.mlm_ln_w, a.mean,
                        a.rstd, P, C);
  be.fill(a.ddense, 0.0f, PC);
  be.gelu_backward(a.ddense, a.dense, a.dact, PC, c.gelu());
  be.fill(a.dgathered, 0.0f, PC);
  linear_backward(be, a.dgathered, dw.mlm_dense_w, dw.mlm_dense_b, a.ddense, a.gathered,
                  w.mlm_dense_w, P, C, C, 0, 0, dense_q);
  // Scatter back: the embedding backward's scatter-add (each position appears once).
  be.embedding_backward(dhidden, positions, a.dgathered, P, C);
}

}  // namespace bertrt
