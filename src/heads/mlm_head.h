// Masked-LM head (BertLMPredictionHead; paper §3.1 Task #1): on the P gathered masked positions,
//   t = LayerNorm(GELU(Dense(h))),  logits = t · word_embᵀ + bias   [P, V]
// The decoder is tied to the word embeddings (its gradient lands in dword_emb), with its own bias.
// Loss: mean cross-entropy over the P positions (those with label < 0 are ignored).
#pragma once

#include <cstdint>

#include "backends/device_array.h"
#include "heads/head_result.h"
#include "model/bert_params.h"

namespace bertrt {

struct QuantLinear;  // quant/quant_linear.h

class MlmActs {
 public:
  void resize(Backend& be, int P, int C, int V);
  int P = 0;
  float *gathered, *dense, *act, *ln, *mean, *rstd, *logits;  // [P, C] ×4, [P] ×2, [P, V]
  // Backward scratch. dlogits IS logits: a training forward's cross-entropy overwrites the logits
  // with their gradient (after the argmax), so the [P, V] buffer, the head's largest, is one.
  float *dlogits, *dln, *dact, *ddense, *dgathered;
 private:
  DeviceArray<float> buf_;
  int capacity_ = 0, C_ = 0, V_ = 0;
};

// loss: mean over counted positions (0 when none); count: positions with a label ≥ 0;
// correct: argmax == label.
using MlmResult = HeadResult;

// hidden [N, C]; positions [P] are flat row indices b·T + t and labels [P] (nullptr: logits only)
// in backend memory, `count` labels ≥ 0. With labels it writes out.loss (Σ cross-entropy) and
// out.argmax [P]; with loss_weight > 0 it also prepares the backward (dlogits = loss_weight ·
// ∂mean_loss/∂logits). dense_q / decoder_q: the transform dense and the tied decoder quantized
// (nullptr: fp32).
void mlm_forward(Backend& be, const BertConfig& c, const BertParams& w, MlmActs& a,
                 const float* hidden, const int32_t* positions, const int32_t* labels, int count,
                 int P, float loss_weight, HeadReadout out, QuantLinear* dense_q = nullptr,
                 QuantLinear* decoder_q = nullptr);

// dhidden [N, C] accumulates at the gathered rows (positions in backend memory, each at most
// once); dw accumulates (dword_emb through the tie; dw.word_emb nullptr: no decoder weight
// gradient, for frozen embeddings).
void mlm_backward(Backend& be, const BertConfig& c, const BertParams& dw, MlmActs& a,
                  float* dhidden, const BertParams& w, const int32_t* positions,
                  QuantLinear* dense_q = nullptr, QuantLinear* decoder_q = nullptr);

}  // namespace bertrt
