// Masked-LM head (BertLMPredictionHead; paper §3.1 Task #1): on the P gathered masked positions,
//   t = LayerNorm(GELU(Dense(h))),  logits = t · word_embᵀ + bias   [P, V]
// The decoder is tied to the word embeddings (its gradient lands in dword_emb), with its own bias.
// Loss: mean cross-entropy over the P positions (those with label < 0 are ignored).
#pragma once

#include <cstdint>

#include "core/buffer.h"
#include "model/bert_params.h"

namespace bertrt {

struct QuantLinear;  // quant/quant_linear.h

class MlmActs {
 public:
  void resize(int P, int C, int V);
  int P = 0;
  float *gathered, *dense, *act, *ln, *mean, *rstd, *logits;  // [P, C] ×4, [P] ×2, [P, V]
  float *dlogits, *dln, *dact, *ddense, *dgathered;            // backward scratch
 private:
  FloatBuffer buf_;
  int capacity_ = 0, C_ = 0, V_ = 0;
};

struct MlmResult {
  double loss = 0;   // mean over counted positions (0 when none)
  int count = 0;     // positions with a label ≥ 0
  int correct = 0;   // argmax == label
};

// hidden [N, C]; positions [P] are flat row indices b·T + t; labels [P] (nullptr: logits only).
// With loss_weight > 0 it also prepares the backward (dlogits = loss_weight · ∂mean_loss/∂logits).
// dense_q / decoder_q: the transform dense and the tied decoder quantized (nullptr: fp32).
MlmResult mlm_forward(Backend& be, const BertConfig& c, const BertParams& w, MlmActs& a,
                      const float* hidden, const int32_t* positions, const int32_t* labels, int P,
                      float loss_weight, QuantLinear* dense_q = nullptr,
                      QuantLinear* decoder_q = nullptr);

// dhidden [N, C] accumulates at the gathered rows; dw accumulates (dword_emb through the tie).
void mlm_backward(Backend& be, const BertConfig& c, const BertParams& dw, MlmActs& a,
                  float* dhidden, const BertParams& w, const int32_t* positions,
                  QuantLinear* dense_q = nullptr, QuantLinear* decoder_q = nullptr);

}  // namespace bertrt
