#include "heads/span_head.h"

#include <algorithm>

#include "model/linear.h"

namespace bertrt {
namespace {

// HF: positions.clamp(0, ignored_index) with ignored_index = T; our cross-entropy ignores < 0.
void clamp_positions(std::vector<int32_t>& out, const int32_t* positions, int B, int T) {
  out.resize(size_t(B));
  for (int b = 0; b < B; ++b) {
    const int32_t p = std::clamp<int32_t>(positions[b], 0, T);
    out[b] = p == T ? -1 : p;
  }
}

// Mean cross-entropy over counted rows of logits [B, T]; dlogits = weight/count · (p − onehot).
double mean_ce(Backend& be, float* dlogits, const std::vector<float>& logits,
               const std::vector<int32_t>& targets, int B, int T, float weight, int* count) {
  *count = int(std::count_if(targets.begin(), targets.end(), [](int32_t t) { return t >= 0; }));
  const float scale = *count ? weight / *count : 0.0f;
  const double sum =
      be.cross_entropy(weight > 0 ? dlogits : nullptr, logits.data(), targets.data(), B, T, scale);
  return *count ? sum / *count : 0.0;
}

int argmax(const float* row, int T) { return int(std::max_element(row, row + T) - row); }

}  // namespace

HeadResult span_forward(Backend& be, SpanActs& a, const float* hidden, const float* weight,
                        const float* bias, const int32_t* start_positions,
                        const int32_t* end_positions, int B, int T, int C, float loss_weight,
                        QuantLinear* q) {
  const size_t N = size_t(B) * T;
  a.logits.assign(N * 2, 0.0f);
  a.dlogits.assign(N * 2, 0.0f);
  a.start.resize(N), a.end.resize(N);
  a.dstart.assign(N, 0.0f), a.dend.assign(N, 0.0f);
  linear_forward(be, a.logits.data(), hidden, weight, bias, int(N), C, 2, 0, q);
  for (size_t i = 0; i < N; ++i) a.start[i] = a.logits[2 * i], a.end[i] = a.logits[2 * i + 1];
  HeadResult r;
  if (!start_positions || !end_positions) return r;
  clamp_positions(a.start_target, start_positions, B, T);
  clamp_positions(a.end_target, end_positions, B, T);
  int n_start = 0, n_end = 0;
  const float half = 0.5f * loss_weight;  // total = (start + end) / 2
  r.loss = 0.5 * (mean_ce(be, a.dstart.data(), a.start, a.start_target, B, T, half, &n_start) +
                  mean_ce(be, a.dend.data(), a.end, a.end_target, B, T, half, &n_end));
  for (int b = 0; b < B; ++b) {
    const int s = a.start_target[b], e = a.end_target[b];
    if (s < 0 || e < 0) continue;
    ++r.count;
    const size_t row = size_t(b) * T;
    r.correct += argmax(&a.start[row], T) == s && argmax(&a.end[row], T) == e;
  }
  return r;
}

void span_backward(Backend& be, float* dhidden, float* dweight, float* dbias, SpanActs& a,
                   const float* hidden, const float* weight, int B, int T, int C,
                   QuantLinear* q) {
  const size_t N = size_t(B) * T;
  for (size_t i = 0; i < N; ++i) a.dlogits[2 * i] = a.dstart[i], a.dlogits[2 * i + 1] = a.dend[i];
  linear_backward(be, dhidden, dweight, dbias, a.dlogits.data(), hidden, weight, int(N), C, 2, 0,
                  0, q);
}

}  // namespace bertrt
