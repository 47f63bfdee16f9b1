// Span extraction (BertForQuestionAnswering; SQuAD in paper §4.2): a start and an end logit per
// token from qa_outputs [2, C] over last_hidden_state (no pooler):
//   [start | end] logits [B·T, 2] = hidden [B·T, C] · weightᵀ + bias, split into [B, T] each;
//   loss = (CE(start_logits, start_positions) + CE(end_logits, end_positions)) / 2, each a mean
//   over its counted examples.
// Positions follow Hugging Face exactly: clamped to [0, T] and T ignored (ignored_index =
// start_logits.size(1)), so a position past the sequence (an answer truncated away) drops out of
// that end's mean, while a negative one becomes 0 ([CLS], "no answer"). Padding is not masked
// (HF does not either).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "heads/head_result.h"

namespace bertrt {

struct QuantLinear;  // quant/quant_linear.h: the head's Linear quantized (nullptr: fp32)

struct SpanActs {
  std::vector<float> logits, dlogits;             // [B·T, 2] as qa_outputs computes them
  std::vector<float> start, end, dstart, dend;    // [B, T]
  std::vector<int32_t> start_target, end_target;  // [B] after clamping (−1 = ignored)
};

// start_positions, end_positions [B] token indices, or nullptr (logits only). loss_weight > 0
// prepares the backward. count = examples whose start and end both count; correct = those whose
// argmax start and end are both exact.
HeadResult span_forward(Backend& be, SpanActs& a, const float* hidden, const float* weight,
                        const float* bias, const int32_t* start_positions,
                        const int32_t* end_positions, int B, int T, int C, float loss_weight,
                        QuantLinear* q = nullptr);

// dhidden [B·T, C], dweight [2, C], dbias [2] accumulate.
void span_backward(Backend& be, float* dhidden, float* dweight, float* dbias, SpanActs& a,
                   const float* hidden, const float* weight, int B, int T, int C,
                   QuantLinear* q = nullptr);

}  // namespace bertrt
