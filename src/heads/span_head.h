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
#include "backends/device_array.h"
#include "heads/head_result.h"

namespace bertrt {

struct QuantLinear;  // quant/quant_linear.h: the head's Linear quantized (nullptr: fp32)

struct SpanActs {
  DeviceArray<float> logits, dlogits;           // [B·T, 2] as qa_outputs computes them
  DeviceArray<float> start, end, dstart, dend;  // [B, T]
};

// HF's clamp of answer positions [B] (host): p → clamp(p, 0, T), and T becomes −1 (ignored).
std::vector<int32_t> clamp_span_positions(const int32_t* positions, int B, int T);

// start_target, end_target [B]: clamped positions (clamp_span_positions) in backend memory, or
// nullptr (logits only); n_start / n_end of them are ≥ 0. With targets it writes out.loss[0..1]
// (Σ cross-entropy of start and end) and out.argmax [2, B] (predicted start, then end);
// loss_weight > 0 prepares the backward.
void span_forward(Backend& be, SpanActs& a, const float* hidden, const float* weight,
                  const float* bias, const int32_t* start_target, const int32_t* end_target,
                  int n_start, int n_end, int B, int T, int C, float loss_weight, HeadReadout out,
                  QuantLinear* q = nullptr);
// From the host's clamped targets and what span_forward left: loss = (mean start CE + mean end
// CE) / 2; count = examples whose start and end both count; correct = those whose argmax start
// and end are both exact.
HeadResult span_result(const int32_t* start_target, const int32_t* end_target,
                       const int32_t* argmax, const double* loss, int B);

// dhidden [B·T, C], dweight [2, C], dbias [2] accumulate.
void span_backward(Backend& be, float* dhidden, float* dweight, float* dbias, SpanActs& a,
                   const float* hidden, const float* weight, int B, int T, int C,
                   QuantLinear* q = nullptr);

}  // namespace bertrt
