// GCC will not if-convert (and so not vectorise) a select that guards float arithmetic while
// -ftrapping-math is on (its default); nothing here reads FP exception flags, so turn it off for
// this file (CMakeLists.txt also passes -fno-trapping-math -fno-math-errno for backends/cpu, the
// latter so that std::sqrt in adamw vectorises: GCC ignores it in a pragma).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "backends/cpu/kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/f32_math.h"
#include "backends/cpu/simd.h"
#include "backends/dropout_rule.h"

namespace bertrt::cpu {
namespace {

constexpr float kSqrt2OverPi = 0.79788456080286535588f;  // √(2/π), the tanh-GELU constant
constexpr float kGeluCubic = 0.044715f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;  // 1/√(2π)

// Reductions with 8 independent partial sums, one per lane of an f32x8 (simd.h). GCC does not
// reorder a single float accumulator without -ffast-math. Inline, so each multi-versioned caller
// gets its own copy.
inline float sum_lanes(const f32x8& a, float tail) {
  return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7])) + tail;
}

inline float sum_f32(const float* __restrict x, int n) {
  f32x8 acc = {};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x8 v;
    std::memcpy(&v, x + i, sizeof v);
    acc += v;
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i];
  return sum_lanes(acc, tail);
}

inline float dot_f32(const float* __restrict x, const float* __restrict y, int n) {
  f32x8 acc = {};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x8 a, b;
    std::memcpy(&a, x + i, sizeof a);
    std::memcpy(&b, y + i, sizeof b);
    acc += a * b;
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i] * y[i];
  return sum_lanes(acc, tail);
}

// The maximum is exact in any order; the lanes are only for speed.
inline float max_f32(const float* __restrict x, int n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  f32x8 acc = {kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x8 v;
    std::memcpy(&v, x + i, sizeof v);
    acc = v > acc ? v : acc;
  }
  float m = kNegInf;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (int k = 0; k < 8; ++k) m = acc[k] > m ? acc[k] : m;
  return m;
}

// out[j] = exp(x[j] − shift) for x[j] ≤ shift; returns Σ out.
inline float exp_shifted_f32(float* __restrict out, const float* __restrict x, float shift, int n) {
  for (int j = 0; j < n; ++j) out[j] = exp_nonpos_f32(x[j] - shift);
  return sum_f32(out, n);
}

// Per-thread scratch rows (grown, never shrunk; slots 0 and 1 for a loop that needs two): the
// row loops run on the pool for every op, and the inference forward must not allocate.
float* scratch_row(int slot, size_t n) {
  thread_local std::vector<float> bufs[2];
  std::vector<float>& b = bufs[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

}  // namespace

// --- elementwise ---------------------------------------------------------------------------------

BERTRT_CPU_CLONES void add_kernel(float* out, const float* a, const float* b, size_t n) {
  // No __restrict: out may alias a or b (elementwise, so aliasing is harmless; GCC versions the
  // loop with a runtime overlap check).
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

BERTRT_CPU_CLONES void bias_add_rows(float* out, const float* bias, int r0, int r1, int cols) {
  for (int r = r0; r < r1; ++r) {
    float* __restrict o = out + static_cast<size_t>(r) * cols;
    const float* __restrict b = bias;
    for (int c = 0; c < cols; ++c) o[c] += b[c];
  }
}

BERTRT_CPU_CLONES void bias_backward_cols(float* dbias, const float* dout, int rows, int cols,
                                          int c0, int c1) {
  float* __restrict db = dbias;
  for (int r = 0; r < rows; ++r) {
    const float* __restrict d = dout + static_cast<size_t>(r) * cols;
    for (int c = c0; c < c1; ++c) db[c] += d[c];
  }
}

BERTRT_CPU_CLONES_V4 void gelu_erf_forward_kernel(float* out, const float* inp, size_t n) {
  float* __restrict o = out;
  const float* __restrict x = inp;
  for (size_t i = 0; i < n; ++i) o[i] = x[i] * normal_cdf_f32(x[i]);
}

BERTRT_CPU_CLONES void gelu_erf_backward_kernel(float* dinp, const float* inp, const float* dout,
                                                size_t n) {
  float* __restrict dx = dinp;
  const float* __restrict x = inp;
  const float* __restrict dy = dout;
  // gelu'(x) = Φ(x) + x·φ(x).
  for (size_t i = 0; i < n; ++i) {
    const float e = exp_neg_half_square_f32(x[i]);
    const float cdf = normal_cdf_f32(x[i], e);
    const float pdf = kInvSqrt2Pi * e;
    dx[i] += (cdf + x[i] * pdf) * dy[i];
  }
}

// std::tanh is a libm call: these stay scalar (the tanh form is not BERT's default).
void gelu_tanh_forward_kernel(float* out, const float* inp, size_t n) {
  float* __restrict o = out;
  const float* __restrict x = inp;
  for (size_t i = 0; i < n; ++i) {
    const float u = kSqrt2OverPi * (x[i] + kGeluCubic * x[i] * x[i] * x[i]);
    o[i] = 0.5f * x[i] * (1.0f + std::tanh(u));
  }
}

void gelu_tanh_backward_kernel(float* dinp, const float* inp, const float* dout, size_t n) {
  float* __restrict dx = dinp;
  const float* __restrict x = inp;
  const float* __restrict dy = dout;
  for (size_t i = 0; i < n; ++i) {
    const float x2 = x[i] * x[i];
    const float t = std::tanh(kSqrt2OverPi * (x[i] + kGeluCubic * x2 * x[i]));
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x2);
    dx[i] += (0.5f * (1.0f + t) + 0.5f * x[i] * (1.0f - t * t) * du) * dy[i];
  }
}

// --- dropout -------------------------------------------------------------------------------------

BERTRT_CPU_CLONES_V4 void dropout_kernel(float* x, size_t i0, size_t i1, uint32_t threshold,
                                         float scale, uint64_t seed) {
  // Elementwise, 32-bit integer ops only: every clone vectorises it and gives the same floats.
  for (size_t i = i0; i < i1; ++i)
    x[i] = dropout_bits(seed, static_cast<uint32_t>(i)) >= threshold ? x[i] * scale : 0.0f;
}

// --- LayerNorm -----------------------------------------------------------------------------------

// R consecutive rows of layernorm_forward_rows. Each row's floats are those of the row alone: its
// sums run in sum_f32's and dot_f32's order, in the same expressions. A row of C floats is two
// chains of C/8 dependent vector adds, latency-bound at BERT's widths; R rows interleave R chains.
template <int R>
[[gnu::always_inline]] inline void layernorm_forward_block(float* __restrict out, float* mean,
                                                           float* rstd, const float* __restrict inp,
                                                           const float* __restrict w,
                                                           const float* __restrict b,
                                                           float* __restrict d, int r, int C,
                                                           float eps) {
  const size_t ld = static_cast<size_t>(C);
  const float* __restrict x = inp + static_cast<size_t>(r) * ld;
  float* __restrict y = out + static_cast<size_t>(r) * ld;
  // Two passes (mean, then Σ(x − μ)²): no cancellation, unlike E[x²] − μ².
  f32x8 acc[R];
  for (int k = 0; k < R; ++k) acc[k] = f32x8{};
  int i = 0;
  for (; i + 8 <= C; i += 8)
    for (int k = 0; k < R; ++k) {
      f32x8 v;
      std::memcpy(&v, x + k * ld + i, sizeof v);
      acc[k] += v;
    }
  float mu[R], rs[R];
  for (int k = 0; k < R; ++k) {
    float tail = 0.0f;
    for (int j = i; j < C; ++j) tail += x[k * ld + j];
    mu[k] = sum_lanes(acc[k], tail) / static_cast<float>(C);
  }
  for (int k = 0; k < R; ++k)
    for (int c = 0; c < C; ++c) d[k * ld + c] = x[k * ld + c] - mu[k];
  for (int k = 0; k < R; ++k) acc[k] = f32x8{};
  for (i = 0; i + 8 <= C; i += 8)
    for (int k = 0; k < R; ++k) {
      f32x8 a, a2;
      std::memcpy(&a, d + k * ld + i, sizeof a);
      std::memcpy(&a2, d + k * ld + i, sizeof a2);
      acc[k] += a * a2;
    }
  for (int k = 0; k < R; ++k) {
    float tail = 0.0f;
    for (int j = i; j < C; ++j) tail += d[k * ld + j] * d[k * ld + j];
    const float var = sum_lanes(acc[k], tail) / static_cast<float>(C);
    rs[k] = 1.0f / std::sqrt(var + eps);
  }
  for (int k = 0; k < R; ++k) {
    for (int c = 0; c < C; ++c) y[k * ld + c] = d[k * ld + c] * rs[k] * w[c] + b[c];
    mean[r + k] = mu[k];
    rstd[r + k] = rs[k];
  }
}

BERTRT_CPU_CLONES void layernorm_forward_rows(float* out, float* mean, float* rstd,
                                              const float* inp, const float* weight,
                                              const float* bias, int r0, int r1, int C, float eps) {
  constexpr int kRows = 4;
  float* d = scratch_row(0, static_cast<size_t>(kRows) * C);
  int r = r0;
  for (; r + kRows <= r1; r += kRows)
    layernorm_forward_block<kRows>(out, mean, rstd, inp, weight, bias, d, r, C, eps);
  for (; r < r1; ++r) layernorm_forward_block<1>(out, mean, rstd, inp, weight, bias, d, r, C, eps);
}

BERTRT_CPU_CLONES void layernorm_backward_dinp_rows(float* dinp, const float* dout,
                                                    const float* inp, const float* weight,
                                                    const float* mean, const float* rstd, int r0,
                                                    int r1, int C) {
  // dx = rstd · (dn − mean(dn) − n · mean(dn ⊙ n)), n = (x − μ)·rstd, dn = w ⊙ dy (llm.c).
  float* __restrict n = scratch_row(0, static_cast<size_t>(C));
  float* __restrict dn = scratch_row(1, static_cast<size_t>(C));
  const float* __restrict w = weight;
  for (int r = r0; r < r1; ++r) {
    const size_t base = static_cast<size_t>(r) * C;
    const float* __restrict x = inp + base;
    const float* __restrict dy = dout + base;
    float* __restrict dx = dinp + base;
    const float mu = mean[r], rs = rstd[r];
    for (int c = 0; c < C; ++c) {
      n[c] = (x[c] - mu) * rs;
      dn[c] = w[c] * dy[c];
    }
    const float dn_mean = sum_f32(dn, C) / static_cast<float>(C);
    const float dn_n_mean = dot_f32(dn, n, C) / static_cast<float>(C);
    for (int c = 0; c < C; ++c) dx[c] += rs * (dn[c] - dn_mean - n[c] * dn_n_mean);
  }
}

BERTRT_CPU_CLONES void layernorm_backward_params_cols(float* dweight, float* dbias,
                                                      const float* dout, const float* inp,
                                                      const float* mean, const float* rstd,
                                                      int rows, int C, int c0, int c1) {
  float* __restrict dw = dweight;
  float* __restrict db = dbias;
  for (int r = 0; r < rows; ++r) {
    const size_t base = static_cast<size_t>(r) * C;
    const float* __restrict x = inp + base;
    const float* __restrict dy = dout + base;
    const float mu = mean[r], rs = rstd[r];
    for (int c = c0; c < c1; ++c) {
      db[c] += dy[c];
      dw[c] += (x[c] - mu) * rs * dy[c];
    }
  }
}

// --- attention softmax ---------------------------------------------------------------------------

// V4: the exps are elementwise, and the sum keeps its 8 partial sums in order (sum_f32) at any
// vector width, so the floats are the v3 clone's.
BERTRT_CPU_CLONES_V4 void softmax_forward_rows(float* probs, const float* scores, const float* mask,
                                               int NH, int T, float scale, size_t r0, size_t r1) {
  float* __restrict v = scratch_row(0, static_cast<size_t>(T));
  const size_t rows_per_batch = static_cast<size_t>(NH) * T;
  for (size_t r = r0; r < r1; ++r) {
    const size_t row = r * T;
    const float* __restrict s = scores + row;
    float* __restrict p = probs + row;
    if (mask) {
      const float* __restrict mk = mask + (r / rows_per_batch) * T;
      for (int j = 0; j < T; ++j) v[j] = scale * s[j] + mk[j];
    } else {
      for (int j = 0; j < T; ++j) v[j] = scale * s[j];
    }
    const float mx = max_f32(v, T);
    // Every key dropped by −inf: uniform, as in ReferenceBackend (per row, not per element).
    if (mx == -std::numeric_limits<float>::infinity()) {
      for (int j = 0; j < T; ++j) p[j] = 1.0f / static_cast<float>(T);
      continue;
    }
    const float sum = exp_shifted_f32(p, v, mx, T);
    const float inv = 1.0f / sum;
    for (int j = 0; j < T; ++j) p[j] *= inv;
  }
}

BERTRT_CPU_CLONES void softmax_backward_rows(float* dscores, const float* probs,
                                             const float* dprobs, int T, float scale, size_t r0,
                                             size_t r1) {
  for (size_t r = r0; r < r1; ++r) {
    const size_t base = r * T;
    const float* __restrict p = probs + base;
    const float* __restrict dp = dprobs + base;
    float* __restrict ds = dscores + base;
    const float dot = dot_f32(p, dp, T);
    for (int j = 0; j < T; ++j) ds[j] += scale * p[j] * (dp[j] - dot);
  }
}

// --- embeddings ----------------------------------------------------------------------------------

BERTRT_CPU_CLONES void embedding_forward_rows(float* out, const int32_t* ids, const float* table,
                                              int r0, int r1, int C) {
  for (int i = r0; i < r1; ++i) {
    float* __restrict o = out + static_cast<size_t>(i) * C;
    const float* __restrict t = table + static_cast<size_t>(ids[i]) * C;
    for (int c = 0; c < C; ++c) o[c] += t[c];
  }
}

BERTRT_CPU_CLONES void embedding_backward_cols(float* dtable, const int32_t* ids, const float* dout,
                                               int n, int C, int c0, int c1) {
  // Rows in order, so repeated ids accumulate exactly as in the reference.
  for (int i = 0; i < n; ++i) {
    float* __restrict dt = dtable + static_cast<size_t>(ids[i]) * C;
    const float* __restrict d = dout + static_cast<size_t>(i) * C;
    for (int c = c0; c < c1; ++c) dt[c] += d[c];
  }
}

// --- loss ----------------------------------------------------------------------------------------

BERTRT_CPU_CLONES void cross_entropy_rows(double* loss, float* dlogits, const float* logits,
                                          const int32_t* targets, int V, float grad_scale, int r0,
                                          int r1) {
  float* __restrict e = scratch_row(0, static_cast<size_t>(V));
  for (int r = r0; r < r1; ++r) {
    const float* z = logits + static_cast<size_t>(r) * V;  // dz may be z (in place): no restrict
    float* dz = dlogits ? dlogits + static_cast<size_t>(r) * V : nullptr;
    const int32_t t = targets[r];
    loss[r] = 0.0;
    if (t < 0) {  // ignored row (Hugging Face's -100)
      if (dz)
        for (int j = 0; j < V; ++j) dz[j] = 0.0f;
      continue;
    }
    const float mx = max_f32(z, V);
    const float sum = exp_shifted_f32(e, z, mx, V);
    loss[r] = static_cast<double>(mx) + std::log(static_cast<double>(sum)) - z[t];
    if (dz) {
      const float s = grad_scale / sum;
      for (int j = 0; j < V; ++j) dz[j] = s * e[j];
      dz[t] -= grad_scale;
    }
  }
}

// --- optimizer -----------------------------------------------------------------------------------

BERTRT_CPU_CLONES void adamw_kernel(float* param, float* m, float* v, const float* grad, size_t n,
                                    const AdamWScalars& s) {
  float* __restrict p = param;
  float* __restrict mm = m;
  float* __restrict vv = v;
  const float* __restrict g = grad;
  const float b1 = s.b1, b2 = s.b2, one_minus_b1 = s.one_minus_b1, one_minus_b2 = s.one_minus_b2;
  const float eps = s.eps;
  if (s.bias_correction) {
    // torch.optim.AdamW; same float operations as ReferenceBackend::adamw_step (see there).
    const float decay = s.decay, step_size = s.step_size, bc2_sqrt = s.bc2_sqrt;
    for (size_t i = 0; i < n; ++i) {
      p[i] *= decay;
      mm[i] = mm[i] * b1 + g[i] * one_minus_b1;
      vv[i] = vv[i] * b2 + one_minus_b2 * g[i] * g[i];
      const float denom = std::sqrt(vv[i]) / bc2_sqrt + eps;
      p[i] -= step_size * mm[i] / denom;
    }
    return;
  }
  // Original BERT AdamWeightDecayOptimizer: decay inside the update (see ReferenceBackend).
  const float wd = s.wd, lrf = s.lr;
  for (size_t i = 0; i < n; ++i) {
    mm[i] = mm[i] * b1 + g[i] * one_minus_b1;
    vv[i] = vv[i] * b2 + one_minus_b2 * (g[i] * g[i]);  // TF: (1 − β2)·square(g)
    p[i] -= lrf * (mm[i] / (std::sqrt(vv[i]) + eps) + wd * p[i]);
  }
}

}  // namespace bertrt::cpu
