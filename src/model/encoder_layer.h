// One post-LN Transformer encoder layer (BertLayer in Hugging Face modeling_bert.py):
//   a   = LayerNorm(inp + Dense(SelfAttention(inp)))
//   out = LayerNorm(a + Dense(GELU(Dense(a))))
// N = B·T rows, C = hidden_size, I = intermediate_size.
#pragma once

#include "model/attention.h"
#include "model/bert_params.h"

namespace bertrt {

struct LayerQuant;

// What the forward keeps for the backward, per layer.
struct LayerActs {
  float *q, *k, *v;            // [N, C]
  float* probs;                // [B, NH, T, T]
  float* ctx;                  // [N, C]
  float* res1;                 // [N, C] inp + attention output (LayerNorm 1 input)
  float* ln1;                  // [N, C]
  float *ln1_mean, *ln1_rstd;  // [N]
  float* inter_pre;            // [N, I] before GELU
  float* inter;                // [N, I] after GELU; the backward overwrites it with a gradient
  float* res2;                 // [N, C] ln1 + FFN output (LayerNorm 2 input)
  float* out;                  // [N, C]
  float *ln2_mean, *ln2_rstd;  // [N]
  // Each adapted Linear's u = drop(inp)·Aᵀ [N, r] (model/lora.h), by LoraLinear; nullptr when
  // the model has no adapters. lora_xd [N, max(C, I)]: the dropped input, shared scratch (LoRA
  // dropout in training only).
  float* lora_u[6] = {};
  float* lora_xd = nullptr;
  // No backward runs through this layer (inference, frozen layers): probs need not be kept.
  bool no_backward = false;
  // The whole forward is inference (no gradient anywhere): the attention runs fused
  // (Backend::attention_forward_inference, e.g. streamed on the cpu backend, other roundings than
  // the training forward's). A training step's frozen layers keep the training forward's ops, so
  // freezing layers never changes the floats of the layers above.
  bool inference = false;
};

// Gradient scratch shared by all layers (the backward visits one layer at a time).
struct LayerGradScratch {
  float *dres, *dln1, *dctx, *dq, *dk, *dv;  // [N, C]
  float* dinter;                             // [N, I] (the GELU input's gradient: LayerActs::inter)
  float *dprobs, *dscores;                   // [B, NH, T, T]
  // With adapters: du [N, r], and the gradient a frozen LayerNorm's weight and bias would get
  // ([C] each), which Backend::layernorm_backward writes and nobody reads.
  float *lora_du = nullptr, *frozen_ln_w = nullptr, *frozen_ln_b = nullptr;
};

// The Linears of a layer that may carry an adapter, in LayerActs::lora_u's order.
enum LoraLinear { kLoraQuery, kLoraKey, kLoraValue, kLoraAttnOut, kLoraInter, kLoraOut };

// The adapters' settings of a forward (model/lora.h); r 0 = no adapters.
struct LoraRun {
  int r = 0;
  float scaling = 0.0f;
  float dropout = 0.0f;  // lora_dropout; applied in training forwards only
};

struct LayerDims {
  AttentionDims att;
  int I;  // intermediate_size
  float eps;
  Gelu gelu;
  // Hidden dropout of a training forward (HF BertSelfOutput / BertOutput: on each sublayer's
  // dense output, before the residual add); 0 = none. The seeds are this layer's, this step's.
  float dropout = 0.0f;
  uint64_t attn_seed = 0, ffn_seed = 0;
  ProbsDropout att_drop = {};  // attention_probs_dropout_prob, this layer's seed
  // Adapters: r, scaling, and the dropout of this forward (0 outside training) with each
  // Linear's seed (LoraLinear order).
  LoraRun lora = {};
  uint64_t lora_seed[6] = {};
  int N() const { return att.N(); }
  int C() const { return att.C(); }
};

// scores: [B, NH, T, T] scratch. q: the layer's quantized Linears (model/bert_quant.h), or
// nullptr for fp32.
void encoder_layer_forward(Backend& be, const LayerActs& a, float* scores, const float* inp,
                           const float* mask_add, const LayerParams& w, const LayerDims& d,
                           const LayerQuant* q = nullptr);

// dinp [N, C] accumulates; dw accumulates.
void encoder_layer_backward(Backend& be, float* dinp, const LayerParams& dw,
                            const LayerGradScratch& s, const float* dout, const float* inp,
                            const LayerActs& a, const LayerParams& w, const LayerDims& d,
                            const LayerQuant* q = nullptr);

}  // namespace bertrt
