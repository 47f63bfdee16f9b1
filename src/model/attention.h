// Multi-head scaled dot-product self-attention core (Vaswani et al. 2017 §3.2.2; BERT §3):
//   probs = softmax(Q·Kᵀ/√HS + mask), ctx = probs·V, per batch b and head h.
// Q, K, V, ctx are [B, T, C] with head h in columns [h·HS, (h+1)·HS), so no transposes are
// materialised: each head is a strided [T, HS] view (ld = C).
#pragma once

#include "backends/backend.h"

namespace bertrt {

struct AttentionDims {
  int B, T, NH, HS;  // batch, seq_len, num_attention_heads, head size (C = NH·HS)
  // A packed inference batch (encoder.h EncoderInputs): B sequences, [B + 1] row offsets on the
  // host, T the longest; nullptr: B padded sequences of T.
  const int32_t* cu_seqlens = nullptr;
  int C() const { return NH * HS; }
  int N() const { return cu_seqlens ? cu_seqlens[B] : B * T; }  // rows of Q, K, V, ctx
};

// Dropout on the probabilities (HF BertSelfAttention: ctx = dropout(probs)·V): p 0 = none; the
// seed is this layer's, this step's (the backward redraws the same mask from it).
struct ProbsDropout {
  float p = 0.0f;
  uint64_t seed = 0;
};

// scores (scratch) and probs [B, NH, T, T]; mask_add [B, T] additive (0 / −10000) or nullptr.
// probs are kept undropped (the softmax backward reads them); the dropped copy lives in scores.
void attention_forward(Backend& be, float* ctx, float* probs, float* scores, const float* q,
                       const float* k, const float* v, const float* mask_add,
                       const AttentionDims& d, ProbsDropout drop = {});

// dq, dk, dv [B, T, C] accumulate; dprobs, dscores [B, NH, T, T] scratch (zeroed here).
void attention_backward(Backend& be, float* dq, float* dk, float* dv, float* dprobs, float* dscores,
                        const float* dctx, const float* q, const float* k, const float* v,
                        const float* probs, const AttentionDims& d, ProbsDropout drop = {});

}  // namespace bertrt
