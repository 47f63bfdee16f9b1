#include "backends/reference/reference_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include <unistd.h>

#include "backends/dropout_rule.h"
#include "core/error.h"

namespace bertrt {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // √(2/π), the tanh-GELU constant
constexpr double kGeluCubic = 0.044715;                  // Hendrycks & Gimpel 2016, eq. for GELU≈

// Φ(x), the standard normal CDF. As erfc: 1 + erf(x/√2) cancels for x ≪ 0 (all digits lost by
// x ≈ −8.5), where erfc keeps full relative precision.
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
// φ(x), the standard normal density.
double normal_pdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * kPi); }

double gelu(double x, Gelu kind) {
  if (kind == Gelu::kErf) return x * normal_cdf(x);
  const double u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}

// d gelu / dx. Exact: Φ(x) + x·φ(x). Tanh form: with u = √(2/π)(x + 0.044715x³), t = tanh u,
// 0.5(1 + t) + 0.5x(1 − t²)·√(2/π)(1 + 3·0.044715x²).
double gelu_grad(double x, Gelu kind) {
  if (kind == Gelu::kErf) return normal_cdf(x) + x * normal_pdf(x);
  const double u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  const double t = std::tanh(u);
  const double du = kSqrt2OverPi * (1.0 + 3.0 * kGeluCubic * x * x);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
}

}  // namespace

// --- memory and data movement -------------------------------------------------------------------

void* ReferenceBackend::alloc(size_t bytes) {
  constexpr size_t kAlign = 64;
  void* p = std::aligned_alloc(kAlign, std::max(kAlign, (bytes + kAlign - 1) / kAlign * kAlign));
  if (!p) fail("{}: out of memory allocating {} bytes", name(), bytes);
  return p;
}

void ReferenceBackend::release(void* p) { std::free(p); }

void ReferenceBackend::upload(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void ReferenceBackend::download(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

namespace {

// Calls f(block, count) over [x, x + n) split at page boundaries, for each block whose bytes are
// not all zero. fill(·, 0) and scale(·, c > 0) leave an all-zero block as it is (the same bits),
// so a buffer the kernel zero-fills lazily (core/host_floats.h: an anonymous mapping) keeps the
// pages nobody wrote out of memory: a frozen tensor's gradient, which every training step zeroes
// (and clips) without a backward ever writing it (fine-tuning with --freeze-*: 266 MB of
// BERT-base's gradient buffer at --freeze-layers 6). Reading such a page maps the shared zero page
// on most kernels (on some VMs' a private one: the Trainer does not read a frozen prefix at all).
template <class F>
void for_nonzero_pages(float* x, size_t n, F&& f) {
  static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  for (size_t i = 0; i < n;) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(x + i);
    const size_t m = std::min(n - i, size_t((at / page + 1) * page - at) / sizeof(float));
    const float* b = x + i;
    bool zero = true;
    for (size_t k = 0; k < m && zero; ++k) {
      uint32_t bits;
      std::memcpy(&bits, b + k, sizeof bits);
      zero = bits == 0;
    }
    if (!zero) f(x + i, m);
    i += m;
  }
}

}  // namespace

void ReferenceBackend::fill(float* x, float value, size_t n) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (bits != 0) return std::fill(x, x + n, value);
  for_nonzero_pages(x, n, [](float* b, size_t m) { std::memset(b, 0, m * sizeof(float)); });
}

void ReferenceBackend::copy(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void ReferenceBackend::copy_2d(float* dst, int ldd, const float* src, int lds, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    std::copy_n(src + static_cast<size_t>(r) * lds, cols, dst + static_cast<size_t>(r) * ldd);
}

void ReferenceBackend::gather_rows(float* out, const float* src, const int32_t* rows, int n,
                                   int C) {
  for (int i = 0; i < n; ++i)
    std::copy_n(src + static_cast<size_t>(rows[i]) * C, C, out + static_cast<size_t>(i) * C);
}

void ReferenceBackend::scale(float* x, float c, size_t n) {
  auto mul = [c](float* b, size_t m) {
    for (size_t i = 0; i < m; ++i) b[i] *= c;
  };
  if (c > 0.0f && std::isfinite(c)) return for_nonzero_pages(x, n, mul);  // +0 · c = +0
  mul(x, n);
}

void ReferenceBackend::sum_squares(double* out, const float* x, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  *out = sum;
}

void ReferenceBackend::argmax_rows(int32_t* out, const float* x, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const float* row = x + static_cast<size_t>(r) * cols;
    out[r] = static_cast<int32_t>(std::max_element(row, row + cols) - row);
  }
}

// --- GEMM ----------------------------------------------------------------------------------------

void ReferenceBackend::gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                            const float* A, int lda, const float* B, int ldb, float beta, float* C,
                            int ldc) {
  // op(A)[i,k], op(B)[k,j] read through the transposes. Loop order only keeps the innermost
  // reads contiguous: i-k-j when B's rows run along j, a k-dot per (i, j) when B is [N, K].
  auto a_at = [&](int i, int k) -> double {
    return trans_a ? A[static_cast<size_t>(k) * lda + i] : A[static_cast<size_t>(i) * lda + k];
  };
  std::vector<double> acc(static_cast<size_t>(N > 0 ? N : 0));
  for (int i = 0; i < M; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0);
    if (trans_b) {
      for (int j = 0; j < N; ++j) {
        const float* b = B + static_cast<size_t>(j) * ldb;
        for (int k = 0; k < K; ++k) acc[j] += a_at(i, k) * b[k];
      }
    } else {
      for (int k = 0; k < K; ++k) {
        const double a = a_at(i, k);
        const float* b = B + static_cast<size_t>(k) * ldb;
        for (int j = 0; j < N; ++j) acc[j] += a * b[j];
      }
    }
    float* c = C + static_cast<size_t>(i) * ldc;
    for (int j = 0; j < N; ++j) {
      // BLAS convention: beta == 0 means C is not read (it may hold garbage).
      const double old = beta == 0.0f ? 0.0 : static_cast<double>(beta) * c[j];
      c[j] = static_cast<float>(static_cast<double>(alpha) * acc[j] + old);
    }
  }
}

void ReferenceBackend::gemm_batched(int batch, bool trans_a, bool trans_b, int M, int N, int K,
                                    float alpha, const float* A, int lda, int64_t stride_a,
                                    const float* B, int ldb, int64_t stride_b, float beta, float* C,
                                    int ldc, int64_t stride_c) {
  for (int p = 0; p < batch; ++p)
    gemm(trans_a, trans_b, M, N, K, alpha, A + p * stride_a, lda, B + p * stride_b, ldb, beta,
         C + p * stride_c, ldc);
}

// --- elementwise ---------------------------------------------------------------------------------

void ReferenceBackend::add(float* out, const float* a, const float* b, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void ReferenceBackend::bias_add(float* out, const float* bias, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) out[static_cast<size_t>(r) * cols + c] += bias[c];
}

void ReferenceBackend::bias_backward(float* dbias, const float* dout, int rows, int cols) {
  for (int c = 0; c < cols; ++c) {
    double sum = 0.0;
    for (int r = 0; r < rows; ++r) sum += dout[static_cast<size_t>(r) * cols + c];
    dbias[c] = static_cast<float>(dbias[c] + sum);
  }
}

void ReferenceBackend::gelu_forward(float* out, const float* inp, size_t n, Gelu kind) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(gelu(inp[i], kind));
}

void ReferenceBackend::gelu_backward(float* dinp, const float* inp, const float* dout, size_t n,
                                     Gelu kind) {
  for (size_t i = 0; i < n; ++i)
    dinp[i] = static_cast<float>(dinp[i] + gelu_grad(inp[i], kind) * dout[i]);
}

void ReferenceBackend::tanh_forward(float* out, const float* inp, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::tanh(static_cast<double>(inp[i])));
}

void ReferenceBackend::tanh_backward(float* dinp, const float* out, const float* dout, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double y = out[i];
    dinp[i] = static_cast<float>(dinp[i] + (1.0 - y * y) * dout[i]);
  }
}

// --- dropout -------------------------------------------------------------------------------------

void ReferenceBackend::dropout(float* x, size_t n, float p, uint64_t seed) {
  check_dropout_args(n, p);
  const uint32_t threshold = dropout_threshold(p);
  const float scale = dropout_scale(p);
  for (size_t i = 0; i < n; ++i)
    x[i] = dropout_bits(seed, static_cast<uint32_t>(i)) >= threshold ? x[i] * scale : 0.0f;
}

// --- LayerNorm (llm.c layernorm_forward / layernorm_backward) ----------------------------------

void ReferenceBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                         const float* weight, const float* bias, int rows, int C,
                                         float eps) {
  for (int r = 0; r < rows; ++r) {
    const float* x = inp + static_cast<size_t>(r) * C;
    float* y = out + static_cast<size_t>(r) * C;
    double mu = 0.0;
    for (int c = 0; c < C; ++c) mu += x[c];
    mu /= C;
    double var = 0.0;  // biased variance, as torch.nn.LayerNorm
    for (int c = 0; c < C; ++c) var += (x[c] - mu) * (x[c] - mu);
    var /= C;
    const double rs = 1.0 / std::sqrt(var + eps);
    for (int c = 0; c < C; ++c) y[c] = static_cast<float>((x[c] - mu) * rs * weight[c] + bias[c]);
    mean[r] = static_cast<float>(mu);
    rstd[r] = static_cast<float>(rs);
  }
}

void ReferenceBackend::layernorm_backward(float* dinp, float* dweight, float* dbias,
                                          const float* dout, const float* inp, const float* weight,
                                          const float* mean, const float* rstd, int rows, int C) {
  // With n = (x − μ)·rstd and dn = w ⊙ dy:  dx = rstd · (dn − mean(dn) − n · mean(dn ⊙ n)).
  for (int r = 0; r < rows; ++r) {
    const size_t base = static_cast<size_t>(r) * C;
    const double mu = mean[r], rs = rstd[r];
    double dn_mean = 0.0, dn_n_mean = 0.0;
    for (int c = 0; c < C; ++c) {
      const double n = (inp[base + c] - mu) * rs;
      const double dn = static_cast<double>(weight[c]) * dout[base + c];
      dn_mean += dn;
      dn_n_mean += dn * n;
    }
    dn_mean /= C;
    dn_n_mean /= C;
    for (int c = 0; c < C; ++c) {
      const double n = (inp[base + c] - mu) * rs;
      const double dn = static_cast<double>(weight[c]) * dout[base + c];
      dbias[c] = static_cast<float>(dbias[c] + static_cast<double>(dout[base + c]));
      dweight[c] = static_cast<float>(dweight[c] + n * dout[base + c]);
      dinp[base + c] = static_cast<float>(dinp[base + c] + rs * (dn - dn_mean - n * dn_n_mean));
    }
  }
}

// --- attention softmax ---------------------------------------------------------------------------

void ReferenceBackend::softmax_forward(float* probs, const float* scores, const float* mask, int B,
                                       int NH, int T, float scale) {
  std::vector<double> v(static_cast<size_t>(T));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < T; ++i) {
        const size_t row = ((static_cast<size_t>(b) * NH + h) * T + i) * T;
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < T; ++j) {
          v[j] = static_cast<double>(scale) * scores[row + j] + (mask ? mask[b * T + j] : 0.0f);
          mx = std::max(mx, v[j]);
        }
        // Every key dropped by −inf: no key is preferred, so uniform (what −10000 gives in HF).
        if (mx == -std::numeric_limits<double>::infinity()) {
          for (int j = 0; j < T; ++j) probs[row + j] = 1.0f / T;
          continue;
        }
        double sum = 0.0;
        for (int j = 0; j < T; ++j) sum += (v[j] = std::exp(v[j] - mx));
        for (int j = 0; j < T; ++j) probs[row + j] = static_cast<float>(v[j] / sum);
      }
}

void ReferenceBackend::softmax_backward(float* dscores, const float* probs, const float* dprobs,
                                        int rows, int T, float scale) {
  for (int r = 0; r < rows; ++r) {
    const size_t base = static_cast<size_t>(r) * T;
    double dot = 0.0;
    for (int j = 0; j < T; ++j) dot += static_cast<double>(probs[base + j]) * dprobs[base + j];
    for (int j = 0; j < T; ++j)
      dscores[base + j] = static_cast<float>(
          dscores[base + j] + static_cast<double>(scale) * probs[base + j] * (dprobs[base + j] - dot));
  }
}

// --- embeddings ----------------------------------------------------------------------------------

void ReferenceBackend::embedding_forward(float* out, const int32_t* ids, const float* table, int n,
                                         int C) {
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < C; ++c)
      out[static_cast<size_t>(i) * C + c] += table[static_cast<size_t>(ids[i]) * C + c];
}

void ReferenceBackend::embedding_backward(float* dtable, const int32_t* ids, const float* dout,
                                          int n, int C) {
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < C; ++c)
      dtable[static_cast<size_t>(ids[i]) * C + c] += dout[static_cast<size_t>(i) * C + c];
}

// --- loss ----------------------------------------------------------------------------------------

void ReferenceBackend::cross_entropy(float* dlogits, double* loss_sum, const float* logits,
                                     const int32_t* targets, int rows, int V, float grad_scale) {
  double total = 0.0;
  for (int r = 0; r < rows; ++r) {
    const float* z = logits + static_cast<size_t>(r) * V;
    float* dz = dlogits ? dlogits + static_cast<size_t>(r) * V : nullptr;
    const int32_t t = targets[r];
    if (t >= V) fail("cross_entropy: row {}: target {} is outside the vocabulary [0, {})", r, t, V);
    if (t < 0) {  // ignored row (Hugging Face's -100)
      if (dz)
        for (int j = 0; j < V; ++j) dz[j] = 0.0f;
      continue;
    }
    double mx = z[0];
    for (int j = 1; j < V; ++j) mx = std::max(mx, static_cast<double>(z[j]));
    double sum = 0.0;
    for (int j = 0; j < V; ++j) sum += std::exp(z[j] - mx);
    const double lse = mx + std::log(sum);
    total += lse - z[t];
    if (dz)
      for (int j = 0; j < V; ++j)
        dz[j] = static_cast<float>(grad_scale * (std::exp(z[j] - lse) - (j == t ? 1.0 : 0.0)));
  }
  *loss_sum = total;
}

void ReferenceBackend::mse_loss(float* dpred, double* loss_sum, const float* pred,
                                const float* target, int n, float weight) {
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double diff = double(pred[i]) - target[i];
    sum += diff * diff;
    if (dpred) dpred[i] = float(weight * 2.0 * diff / n);  // ∂/∂pred_i of mean (pred − target)²
  }
  *loss_sum = sum;
}

// --- optimizer -----------------------------------------------------------------------------------

void ReferenceBackend::adamw_step(float* param, float* m, float* v, const float* grad, size_t n,
                                  const AdamWHyper& h, int64_t t) {
  const double b1 = h.beta1, b2 = h.beta2, lr = h.lr, eps = h.eps, wd = h.weight_decay;
  if (h.bias_correction) {
    // torch.optim.AdamW (torch 1.13 _single_tensor_adamw), step by step, in float like torch:
    //   p *= 1 − lr·wd;  m = β1·m + (1 − β1)·g;  v = β2·v + (1 − β2)·g²;
    //   p −= lr/(1 − β1^t) · m / (√v / √(1 − β2^t) + eps).
    // The scalars are Python doubles in torch; they are rounded to float where torch applies them.
    const float decay = static_cast<float>(1.0 - lr * wd);
    const float step_size = static_cast<float>(lr / (1.0 - std::pow(b1, static_cast<double>(t))));
    const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(b2, static_cast<double>(t))));
    for (size_t i = 0; i < n; ++i) {
      const float g = grad[i];
      param[i] *= decay;
      m[i] = m[i] * static_cast<float>(b1) + g * static_cast<float>(1.0 - b1);
      v[i] = v[i] * static_cast<float>(b2) + static_cast<float>(1.0 - b2) * g * g;
      const float denom = std::sqrt(v[i]) / bc2_sqrt + static_cast<float>(eps);
      param[i] -= step_size * m[i] / denom;  // torch addcdiv_: p + (−step·m)/denom
    }
    return;
  }
  // The original BERT optimizer (google-research/bert optimization.py, AdamWeightDecayOptimizer):
  // no bias correction, and the decay sits INSIDE the update:
  //   m = β1·m + (1 − β1)·g;  v = β2·v + (1 − β2)·g²;  u = m / (√v + eps) + wd·p;  p −= lr·u.
  // To first order this equals torch's decoupled p *= 1 − lr·wd, but it is not bit-identical
  // (torch decays p before the Adam step; here wd·p uses the old p inside one fused update).
  for (size_t i = 0; i < n; ++i) {
    const float g = grad[i];
    m[i] = m[i] * static_cast<float>(b1) + g * static_cast<float>(1.0 - b1);
    v[i] = v[i] * static_cast<float>(b2) + static_cast<float>(1.0 - b2) * (g * g);
    const float update = m[i] / (std::sqrt(v[i]) + static_cast<float>(eps)) +
                         static_cast<float>(wd) * param[i];
    param[i] -= static_cast<float>(lr) * update;
  }
}

}  // namespace bertrt
