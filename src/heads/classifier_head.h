// A linear classifier over rows with softmax cross-entropy. Three heads are this math with
// different inputs and weights:
//   - NSP (BertOnlyNSPHead, cls.seq_relationship [2, C], paper §3.1 Task #2) on pooler_output;
//   - sequence(-pair) classification (BertForSequenceClassification.classifier, paper §4.1) on
//     pooler_output, rows = B;
//   - token classification (BertForTokenClassification.classifier, paper §5.3) on every token of
//     last_hidden_state, rows = B·T (no pooler).
//   logits [rows, K] = inp [rows, C] · weightᵀ + bias;
//   loss = mean cross-entropy over rows whose label is ≥ 0 (HF's ignore_index −100: the later
//   word pieces, [CLS]/[SEP] and padding of token classification carry −100).
#pragma once

#include <cstdint>

#include "backends/backend.h"
#include "backends/device_array.h"
#include "heads/head_result.h"

namespace bertrt {

struct QuantLinear;  // quant/quant_linear.h: the head's Linear quantized (nullptr: fp32)

struct ClassifierActs {
  DeviceArray<float> logits, dlogits;  // [rows, K]
};

// labels [rows] in backend memory, or nullptr (logits only); `count` of them are ≥ 0 (the host
// counted them: count_labels). With labels it writes out.loss (Σ cross-entropy) and out.argmax
// [rows]; loss_weight > 0 prepares the backward (dlogits = loss_weight · ∂mean_loss/∂logits).
void classifier_forward(Backend& be, ClassifierActs& a, const float* inp, const float* weight,
                        const float* bias, const int32_t* labels, int count, int rows, int C, int K,
                        float loss_weight, HeadReadout out, QuantLinear* q = nullptr);

// dinp [rows, C] accumulates; dweight [K, C], dbias [K] accumulate.
void classifier_backward(Backend& be, float* dinp, float* dweight, float* dbias,
                         const ClassifierActs& a, const float* inp, const float* weight, int rows,
                         int C, int K, QuantLinear* q = nullptr);

}  // namespace bertrt
