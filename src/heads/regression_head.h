// Regression on the pooled [CLS] (BertForSequenceClassification with num_labels = 1,
// problem_type "regression"; STS-B in paper §4.1):
//   score [B] = pooled [B, C] · weightᵀ + bias   (weight = classifier.weight [1, C])
//   loss = mean_b (score_b − target_b)²           (torch.nn.MSELoss, reduction "mean", over B)
// The backend has no MSE op and this one adds none (backend.h belongs to the op table shared by
// every backend): the loss and its gradient are B subtractions, a plain loop.
#pragma once

#include "backends/backend.h"
#include "heads/classifier_head.h"

namespace bertrt {

struct QuantLinear;  // quant/quant_linear.h: the head's Linear quantized (nullptr: fp32)

// targets [B] or nullptr (scores only, in a.logits). loss_weight > 0 prepares the backward.
// count = B, correct = 0.
HeadResult regression_forward(Backend& be, ClassifierActs& a, const float* pooled,
                              const float* weight, const float* bias, const float* targets, int B,
                              int C, float loss_weight, QuantLinear* q = nullptr);

// dpooled [B, C], dweight [1, C], dbias [1] accumulate.
void regression_backward(Backend& be, float* dpooled, float* dweight, float* dbias,
                         const ClassifierActs& a, const float* pooled, const float* weight, int B,
                         int C, QuantLinear* q = nullptr);

}  // namespace bertrt
