// Regression on the pooled [CLS] (BertForSequenceClassification with num_labels = 1,
// problem_type "regression"; STS-B in paper §4.1):
//   score [B] = pooled [B, C] · weightᵀ + bias   (weight = classifier.weight [1, C])
//   loss = mean_b (score_b − target_b)²           (torch.nn.MSELoss, reduction "mean", over B)
#pragma once

#include "backends/backend.h"
#include "heads/classifier_head.h"

namespace bertrt {

struct QuantLinear;  // quant/quant_linear.h: the head's Linear quantized (nullptr: fp32)

// targets [B] in backend memory, or nullptr (scores only, in a.logits). With targets it writes
// *loss_sum = Σ (score − target)²; loss_weight > 0 prepares the backward. The result is
// regression_result().
void regression_forward(Backend& be, ClassifierActs& a, const float* pooled, const float* weight,
                        const float* bias, const float* targets, int B, int C, float loss_weight,
                        double* loss_sum, QuantLinear* q = nullptr);
// loss = loss_sum / B, count = B, correct = 0 (all zero for B = 0).
HeadResult regression_result(double loss_sum, int B);

// dpooled [B, C], dweight [1, C], dbias [1] accumulate.
void regression_backward(Backend& be, float* dpooled, float* dweight, float* dbias,
                         const ClassifierActs& a, const float* pooled, const float* weight, int B,
                         int C, QuantLinear* q = nullptr);

}  // namespace bertrt
