// GCC will not if-convert (and so not vectorise) a select that guards float arithmetic while
// -ftrapping-math is on (its default); nothing here reads FP exception flags, so turn it off for
// this file. Clang's default is already -fno-trapping-math. (sqrt in adamw_step stays scalar
// unless the build adds -fno-math-errno: GCC ignores that one in a pragma.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "backends/cpu/cpu_backend.h"

#include <cblas.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/f32_math.h"
#include "core/error.h"

namespace bertrt {
namespace {

using cpu::erf_f64_fast;
using cpu::exp_nonpos_f32;

constexpr float kSqrt2OverPi = 0.79788456080286535588f;  // √(2/π), the tanh-GELU constant
constexpr float kGeluCubic = 0.044715f;
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;  // 1/√(2π)

// Reductions with 8 independent partial sums: GCC does not reorder a single float accumulator
// without -ffast-math, but it turns the 8-lane inner block into vector adds (SLP).
float sum_f32(const float* __restrict x, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += x[i + k];
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

float dot_f32(const float* __restrict x, const float* __restrict y, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += x[i + k] * y[i + k];
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i] * y[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

float max_f32(const float* __restrict x, int n) {
  float acc[8];
  for (int k = 0; k < 8; ++k) acc[k] = -std::numeric_limits<float>::infinity();
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] = x[i + k] > acc[k] ? x[i + k] : acc[k];
  float m = -std::numeric_limits<float>::infinity();
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (int k = 0; k < 8; ++k) m = acc[k] > m ? acc[k] : m;
  return m;
}

// out[j] = exp(x[j] − shift) for x[j] ≤ shift; returns Σ out.
float exp_shifted_f32(float* __restrict out, const float* __restrict x, float shift, int n) {
  for (int j = 0; j < n; ++j) out[j] = exp_nonpos_f32(x[j] - shift);
  return sum_f32(out, n);
}

void scale_f32(float* __restrict x, float s, int n) {
  for (int j = 0; j < n; ++j) x[j] *= s;
}

}  // namespace

bool CpuBackend::supports(Op op) const {
  switch (op) {
    case Op::kGemm:
    case Op::kGemmBatched:
    case Op::kAdd:
    case Op::kBiasAdd:
    case Op::kBiasBackward:
    case Op::kGeluForward:
    case Op::kGeluBackward:
    case Op::kLayerNormForward:
    case Op::kLayerNormBackward:
    case Op::kSoftmaxForward:
    case Op::kSoftmaxBackward:
    case Op::kEmbeddingForward:
    case Op::kEmbeddingBackward:
    case Op::kCrossEntropy:
    case Op::kAdamW: return true;
    case Op::kTanhForward:
    case Op::kTanhBackward:
    case Op::kCount: return false;
  }
  return false;
}

// --- GEMM: OpenBLAS ------------------------------------------------------------------------------

void CpuBackend::gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                      int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// OpenBLAS 0.3.21 (Debian 12) has no cblas_sgemm_batch, so the batch is a loop of sgemm calls;
// attention's per-head GEMMs (T×T×64) are large enough for that to cost little.
void CpuBackend::gemm_batched(int batch, bool trans_a, bool trans_b, int M, int N, int K,
                              float alpha, const float* A, int lda, int64_t stride_a,
                              const float* B, int ldb, int64_t stride_b, float beta, float* C,
                              int ldc, int64_t stride_c) {
  for (int p = 0; p < batch; ++p)
    gemm(trans_a, trans_b, M, N, K, alpha, A + p * stride_a, lda, B + p * stride_b, ldb, beta,
         C + p * stride_c, ldc);
}

// --- elementwise ---------------------------------------------------------------------------------

void CpuBackend::add(float* out, const float* a, const float* b, size_t n) {
  // No __restrict: out may alias a or b (elementwise, so aliasing is harmless; GCC versions the
  // loop with a runtime overlap check).
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void CpuBackend::bias_add(float* out, const float* bias, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float* __restrict o = out + static_cast<size_t>(r) * cols;
    const float* __restrict b = bias;
    for (int c = 0; c < cols; ++c) o[c] += b[c];
  }
}

void CpuBackend::bias_backward(float* dbias, const float* dout, int rows, int cols) {
  float* __restrict db = dbias;
  for (int r = 0; r < rows; ++r) {
    const float* __restrict d = dout + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) db[c] += d[c];
  }
}

void CpuBackend::gelu_forward(float* out, const float* inp, size_t n, Gelu kind) {
  float* __restrict o = out;
  const float* __restrict x = inp;
  if (kind == Gelu::kErf) {
    for (size_t i = 0; i < n; ++i) {
      const double xd = x[i];
      o[i] = static_cast<float>(0.5 * xd * (1.0 + erf_f64_fast(xd * kInvSqrt2)));
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const float u = kSqrt2OverPi * (x[i] + kGeluCubic * x[i] * x[i] * x[i]);
    o[i] = 0.5f * x[i] * (1.0f + std::tanh(u));
  }
}

void CpuBackend::gelu_backward(float* dinp, const float* inp, const float* dout, size_t n,
                               Gelu kind) {
  float* __restrict dx = dinp;
  const float* __restrict x = inp;
  const float* __restrict dy = dout;
  if (kind == Gelu::kErf) {
    // gelu'(x) = Φ(x) + x·φ(x).
    for (size_t i = 0; i < n; ++i) {
      const float cdf = static_cast<float>(0.5 * (1.0 + erf_f64_fast(x[i] * kInvSqrt2)));
      const float pdf = kInvSqrt2Pi * exp_nonpos_f32(-0.5f * x[i] * x[i]);
      dx[i] += (cdf + x[i] * pdf) * dy[i];
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const float x2 = x[i] * x[i];
    const float t = std::tanh(kSqrt2OverPi * (x[i] + kGeluCubic * x2 * x[i]));
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x2);
    dx[i] += (0.5f * (1.0f + t) + 0.5f * x[i] * (1.0f - t * t) * du) * dy[i];
  }
}

// --- LayerNorm -----------------------------------------------------------------------------------

void CpuBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                   const float* weight, const float* bias, int rows, int C,
                                   float eps) {
  std::vector<float> centered(static_cast<size_t>(C));
  float* __restrict d = centered.data();
  const float* __restrict w = weight;
  const float* __restrict b = bias;
  for (int r = 0; r < rows; ++r) {
    const float* __restrict x = inp + static_cast<size_t>(r) * C;
    float* __restrict y = out + static_cast<size_t>(r) * C;
    // Two passes (mean, then Σ(x − μ)²): no cancellation, unlike E[x²] − μ².
    const float mu = sum_f32(x, C) / static_cast<float>(C);
    for (int c = 0; c < C; ++c) d[c] = x[c] - mu;
    const float var = dot_f32(d, d, C) / static_cast<float>(C);
    const float rs = 1.0f / std::sqrt(var + eps);
    for (int c = 0; c < C; ++c) y[c] = d[c] * rs * w[c] + b[c];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void CpuBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                    const float* inp, const float* weight, const float* mean,
                                    const float* rstd, int rows, int C) {
  // dx = rstd · (dn − mean(dn) − n · mean(dn ⊙ n)), n = (x − μ)·rstd, dn = w ⊙ dy (llm.c).
  std::vector<float> norm_buf(static_cast<size_t>(C)), dnorm_buf(static_cast<size_t>(C));
  float* __restrict n = norm_buf.data();
  float* __restrict dn = dnorm_buf.data();
  float* __restrict dw = dweight;
  float* __restrict db = dbias;
  const float* __restrict w = weight;
  for (int r = 0; r < rows; ++r) {
    const size_t base = static_cast<size_t>(r) * C;
    const float* __restrict x = inp + base;
    const float* __restrict dy = dout + base;
    float* __restrict dx = dinp + base;
    const float mu = mean[r], rs = rstd[r];
    for (int c = 0; c < C; ++c) {
      n[c] = (x[c] - mu) * rs;
      dn[c] = w[c] * dy[c];
      db[c] += dy[c];
      dw[c] += n[c] * dy[c];
    }
    const float dn_mean = sum_f32(dn, C) / static_cast<float>(C);
    const float dn_n_mean = dot_f32(dn, n, C) / static_cast<float>(C);
    for (int c = 0; c < C; ++c) dx[c] += rs * (dn[c] - dn_mean - n[c] * dn_n_mean);
  }
}

// --- attention softmax ---------------------------------------------------------------------------

void CpuBackend::softmax_forward(float* probs, const float* scores, const float* mask, int B,
                                 int NH, int T, float scale) {
  std::vector<float> row_buf(static_cast<size_t>(T));
  float* __restrict v = row_buf.data();
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < T; ++i) {
        const size_t row = ((static_cast<size_t>(b) * NH + h) * T + i) * T;
        const float* __restrict s = scores + row;
        float* __restrict p = probs + row;
        if (mask) {
          const float* __restrict mk = mask + static_cast<size_t>(b) * T;
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
        scale_f32(p, 1.0f / sum, T);
      }
}

void CpuBackend::softmax_backward(float* dscores, const float* probs, const float* dprobs,
                                  int rows, int T, float scale) {
  for (int r = 0; r < rows; ++r) {
    const size_t base = static_cast<size_t>(r) * T;
    const float* __restrict p = probs + base;
    const float* __restrict dp = dprobs + base;
    float* __restrict ds = dscores + base;
    const float dot = dot_f32(p, dp, T);
    for (int j = 0; j < T; ++j) ds[j] += scale * p[j] * (dp[j] - dot);
  }
}

// --- embeddings ----------------------------------------------------------------------------------

void CpuBackend::embedding_forward(float* out, const int32_t* ids, const float* table, int n,
                                   int C) {
  for (int i = 0; i < n; ++i) {
    float* __restrict o = out + static_cast<size_t>(i) * C;
    const float* __restrict t = table + static_cast<size_t>(ids[i]) * C;
    for (int c = 0; c < C; ++c) o[c] += t[c];
  }
}

void CpuBackend::embedding_backward(float* dtable, const int32_t* ids, const float* dout, int n,
                                    int C) {
  // Rows in order, so repeated ids accumulate exactly as in the reference.
  for (int i = 0; i < n; ++i) {
    float* __restrict dt = dtable + static_cast<size_t>(ids[i]) * C;
    const float* __restrict d = dout + static_cast<size_t>(i) * C;
    for (int c = 0; c < C; ++c) dt[c] += d[c];
  }
}

// --- loss ----------------------------------------------------------------------------------------

double CpuBackend::cross_entropy(float* dlogits, const float* logits, const int32_t* targets,
                                 int rows, int V, float grad_scale) {
  std::vector<float> e_buf(static_cast<size_t>(V));
  float* __restrict e = e_buf.data();
  double total = 0.0;
  for (int r = 0; r < rows; ++r) {
    const float* __restrict z = logits + static_cast<size_t>(r) * V;
    float* __restrict dz = dlogits ? dlogits + static_cast<size_t>(r) * V : nullptr;
    const int32_t t = targets[r];
    if (t >= V) fail("cross_entropy: row {}: target {} is outside the vocabulary [0, {})", r, t, V);
    if (t < 0) {  // ignored row (Hugging Face's -100)
      if (dz)
        for (int j = 0; j < V; ++j) dz[j] = 0.0f;
      continue;
    }
    const float mx = max_f32(z, V);
    const float sum = exp_shifted_f32(e, z, mx, V);
    total += static_cast<double>(mx) + std::log(static_cast<double>(sum)) - z[t];
    if (dz) {
      const float s = grad_scale / sum;
      for (int j = 0; j < V; ++j) dz[j] = s * e[j];
      dz[t] -= grad_scale;
    }
  }
  return total;
}

// --- optimizer -----------------------------------------------------------------------------------

void CpuBackend::adamw_step(float* param, float* m, float* v, const float* grad, size_t n,
                            const AdamWHyper& h, int64_t t) {
  float* __restrict p = param;
  float* __restrict mm = m;
  float* __restrict vv = v;
  const float* __restrict g = grad;
  const double lr = h.lr, b1d = h.beta1, b2d = h.beta2;
  const float b1 = h.beta1, b2 = h.beta2, eps = h.eps;
  const float one_minus_b1 = static_cast<float>(1.0 - b1d);
  const float one_minus_b2 = static_cast<float>(1.0 - b2d);
  if (h.bias_correction) {
    // torch.optim.AdamW; same float operations as ReferenceBackend::adamw_step (see there).
    const float decay = static_cast<float>(1.0 - lr * h.weight_decay);
    const float step_size = static_cast<float>(lr / (1.0 - std::pow(b1d, static_cast<double>(t))));
    const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(b2d, static_cast<double>(t))));
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
  const float wd = h.weight_decay, lrf = h.lr;
  for (size_t i = 0; i < n; ++i) {
    mm[i] = mm[i] * b1 + g[i] * one_minus_b1;
    vv[i] = vv[i] * b2 + one_minus_b2 * (g[i] * g[i]);  // TF: (1 − β2)·square(g)
    p[i] -= lrf * (mm[i] / (std::sqrt(vv[i]) + eps) + wd * p[i]);
  }
}

}  // namespace bertrt
