#include "heads/span_head.h"

#include <algorithm>

#include "model/linear.h"

namespace bertrt {

std::vector<int32_t> clamp_span_positions(const int32_t* positions, int B, int T) {
  std::vector<int32_t> out(static_cast<size_t>(B));
  for (int b = 0; b < B; ++b) {
    const int32_t p = std::clamp<int32_t>(positions[b], 0, T);
    out[b] = p == T ? -1 : p;  // HF: ignored_index = T; our cross-entropy ignores < 0
  }
  return out;
}

void span_forward(Backend& be, SpanActs& a, const float* hidden, const float* weight,
                  const float* bias, const int32_t* start_target, const int32_t* end_target,
                  int n_start, int n_end, int B, int T, int C, float loss_weight, HeadReadout out,
                  QuantLinear* q) {
  const size_t N = size_t(B) * T;
  float* logits = a.logits.ensure(be, N * 2);
  a.dlogits.ensure(be, N * 2);
  float* start = a.start.ensure(be, N);
  float* end = a.end.ensure(be, N);
  float* dstart = a.dstart.ensure(be, N);
  float* dend = a.dend.ensure(be, N);
  linear_forward(be, logits, hidden, weight, bias, int(N), C, 2, 0, q);
  be.copy_2d(start, 1, logits, 2, int(N), 1);
  be.copy_2d(end, 1, logits + 1, 2, int(N), 1);
  if (!start_target || !end_target) return;
  // Each end's loss is a mean over its own counted rows; total = (start + end) / 2.
  const float half = 0.5f * loss_weight;
  const bool grad = loss_weight > 0;
  be.cross_entropy(grad ? dstart : nullptr, out.loss, start, start_target, B, T,
                   n_start ? half / n_start : 0.0f);
  be.cross_entropy(grad ? dend : nullptr, out.loss + 1, end, end_target, B, T,
                   n_end ? half / n_end : 0.0f);
  be.argmax_rows(out.argmax, start, B, T);
  be.argmax_rows(out.argmax + B, end, B, T);
}

HeadResult span_result(const int32_t* start_target, const int32_t* end_target,
                       const int32_t* argmax, const double* loss, int B) {
  const int n_start = count_labels(start_target, B), n_end = count_labels(end_target, B);
  HeadResult r;
  r.loss = 0.5 * ((n_start ? loss[0] / n_start : 0.0) + (n_end ? loss[1] / n_end : 0.0));
  for (int b = 0; b < B; ++b) {
    const int s = start_target[b], e = end_target[b];
    if (s < 0 || e < 0) continue;
    ++r.count;
    r.correct += argmax[b] == s && argmax[B + b] == e;
  }
  return r;
}

void span_backward(Backend& be, float* dhidden, float* dweight, float* dbias, SpanActs& a,
                   const float* hidden, const float* weight, int B, int T, int C,
                   QuantLinear* q) {
  const int N = B * T;
  be.copy_2d(a.dlogits.data(), 2, a.dstart.data(), 1, N, 1);
  be.copy_2d(a.dlogits.data() + 1, 2, a.dend.data(), 1, N, 1);
  linear_backward(be, dhidden, dweight, dbias, a.dlogits.data(), hidden, weight, N, C, 2, 0, 0, q);
}

}  // namespace bertrt
