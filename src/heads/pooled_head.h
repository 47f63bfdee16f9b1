// A linear classifier on the pooled [CLS] output: the NSP head (BertOnlyNSPHead,
// cls.seq_relationship, paper §3.1 Task #2) and sequence classification (BertForSequence-
// Classification's `classifier`, paper §4.1) are the same math with different weights.
//   logits [B, K] = pooled [B, C] · weightᵀ + bias;  loss = mean cross-entropy over labels ≥ 0.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"

namespace bertrt {

struct PooledHeadResult {
  double loss = 0;
  int count = 0, correct = 0;
};

struct PooledHeadActs {
  std::vector<float> logits, dlogits;  // [B, K]
};

// labels [B] or nullptr (logits only). loss_weight > 0 prepares the backward.
PooledHeadResult pooled_head_forward(Backend& be, PooledHeadActs& a, const float* pooled,
                                     const float* weight, const float* bias,
                                     const int32_t* labels, int B, int C, int K,
                                     float loss_weight);

// dpooled [B, C] accumulates; dweight, dbias accumulate.
void pooled_head_backward(Backend& be, float* dpooled, float* dweight, float* dbias,
                          const PooledHeadActs& a, const float* pooled, const float* weight,
                          int B, int C, int K);

}  // namespace bertrt
