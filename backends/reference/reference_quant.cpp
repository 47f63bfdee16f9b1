// The quantization ops of ReferenceBackend, written as PyTorch writes them (ATen
// native/quantized/cpu/kernels/QuantizedOpKernels.cpp: fake_quantize_tensor_cachemask_kernel,
// fake_quant_per_channel_cachemask_cpu; native/quantized/AffineQuantizerBase.cpp: quantize_val):
// q = zero_point + nearbyint(x · (1.0f / scale)), all in float, ties to even. The integer GEMMs
// are plain exact sums in int64.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "backends/quant_checks.h"
#include "backends/quant_rules.h"
#include "backends/reference/reference_backend.h"
#include "core/error.h"
#include "core/fp_contract.h"

namespace bertrt {
namespace {

// One element of the fake-quant forward; `inv` is 1.0f / scale.
inline void fake_quant_one(float* out, uint8_t* mask, float x, float scale, float inv, int zp,
                           int qmin, int qmax) {
  const float q = std::nearbyint(x * inv) + static_cast<float>(zp);
  const float c = std::fmin(std::fmax(q, static_cast<float>(qmin)), static_cast<float>(qmax));
  *out = (c - static_cast<float>(zp)) * scale;
  if (mask) *mask = (q >= static_cast<float>(qmin) && q <= static_cast<float>(qmax)) ? 1 : 0;
}

}  // namespace

void ReferenceBackend::min_max(float* mn, float* mx, const float* x, size_t n) {
  if (n == 0) fail("min_max: empty input");
  float lo = x[0], hi = x[0];
  for (size_t i = 1; i < n; ++i) {
    lo = std::fmin(lo, x[i]);
    hi = std::fmax(hi, x[i]);
  }
  *mn = lo;
  *mx = hi;
}

void ReferenceBackend::absmax_rows(float* out, const float* x, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float m = 0.0f;
    for (int c = 0; c < cols; ++c)
      m = std::fmax(m, std::fabs(x[static_cast<size_t>(r) * cols + c]));
    out[r] = m;
  }
}

void ReferenceBackend::symmetric_scale_rows(float* scale, const float* x, int rows, int cols,
                                            int qmin, int qmax) {
  absmax_rows(scale, x, rows, cols);
  for (int r = 0; r < rows; ++r) scale[r] = symmetric_scale_rule(scale[r], qmin, qmax);
}

void ReferenceBackend::fake_quant_per_tensor(float* out, uint8_t* mask, const float* x, size_t n,
                                             float scale, int zero_point, int qmin, int qmax) {
  check_quant_scale("fake_quant_per_tensor", scale, 0);
  const float inv = 1.0f / scale;
  for (size_t i = 0; i < n; ++i)
    fake_quant_one(out + i, mask ? mask + i : nullptr, x[i], scale, inv, zero_point, qmin, qmax);
}

void ReferenceBackend::fake_quant_per_row(float* out, uint8_t* mask, const float* x,
                                          const float* scale, int rows, int cols, int qmin,
                                          int qmax) {
  for (int r = 0; r < rows; ++r) {
    check_quant_scale("fake_quant_per_row", scale[r], r);
    const float inv = 1.0f / scale[r];
    for (int c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r) * cols + c;
      fake_quant_one(out + i, mask ? mask + i : nullptr, x[i], scale[r], inv, 0, qmin, qmax);
    }
  }
}

void ReferenceBackend::fake_quant_backward(float* dinp, const uint8_t* mask, const float* dout,
                                           size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (mask[i]) dinp[i] += dout[i];
}

void ReferenceBackend::quantize_u8(uint8_t* q, const float* x, size_t n, float scale,
                                   int zero_point) {
  check_quant_scale("quantize_u8", scale, 0);
  const float inv = 1.0f / scale;
  for (size_t i = 0; i < n; ++i) {
    const float v = std::nearbyint(x[i] * inv) + static_cast<float>(zero_point);
    q[i] = static_cast<uint8_t>(std::fmin(std::fmax(v, 0.0f), 255.0f));
  }
}

void ReferenceBackend::gemm_u8s8_s32(int M, int N, int K, const uint8_t* A, int lda,
                                     const int8_t* B, int ldb, int32_t* C, int ldc) {
  check_q8_k("gemm_u8s8_s32", K);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int k = 0; k < K; ++k)
        acc += int64_t{A[static_cast<size_t>(m) * lda + k]} * B[static_cast<size_t>(n) * ldb + k];
      C[static_cast<size_t>(m) * ldc + n] = static_cast<int32_t>(acc);
    }
}

void ReferenceBackend::linear_u8s8(float* out, int ldo, const uint8_t* A, int lda, float a_scale,
                                   int a_zero_point, const int8_t* W, const float* w_scale,
                                   const int32_t* w_sum, const float* bias, int M, int N, int K) {
  check_q8_k("linear_u8s8", K);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int k = 0; k < K; ++k)
        acc += int64_t{A[static_cast<size_t>(m) * lda + k]} * W[static_cast<size_t>(n) * K + k];
      acc -= int64_t{a_zero_point} * w_sum[n];
      const float s = a_scale * w_scale[n];
      float v = static_cast<float>(acc) * s;
      if (bias) v += bias[n];
      out[static_cast<size_t>(m) * ldo + n] = v;
    }
}

// out += s·q with the product rounded on its own on every target (no FMA, also where the ISA has
// one): the cpu backend's vectorised loop gives the same floats.
BERTRT_NO_FP_CONTRACT void ReferenceBackend::embedding_forward_s8(float* out, const int32_t* ids,
                                                                  const int8_t* q,
                                                                  const float* scale, int n, int C,
                                                                  int V) {
  for (int i = 0; i < n; ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= V)
      fail("embedding_forward_s8: position {}: id {} is outside the table [0, {})", i, id, V);
    const int8_t* row = q + static_cast<size_t>(id) * C;
    const float s = scale[id];
    float* o = out + static_cast<size_t>(i) * C;
    for (int c = 0; c < C; ++c) {
      const float v = s * static_cast<float>(row[c]);
      o[c] += v;
    }
  }
}

void ReferenceBackend::observe_min_max(float* range, const float* batch, int parts, bool first,
                                       float momentum) {
  float lo = batch[0], hi = batch[1];
  for (int r = 1; r < parts; ++r)
    lo = std::min(lo, batch[2 * r]), hi = std::max(hi, batch[2 * r + 1]);
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
    fail("activation observer: batch range [{}, {}] is not finite (NaN or Inf in the activations?)",
         lo, hi);
  if (first) {
    range[0] = lo, range[1] = hi;
    return;
  }
  // The product rounded on its own (torch's two tensor ops; no contraction into an FMA).
  volatile float d0 = momentum * (lo - range[0]), d1 = momentum * (hi - range[1]);
  range[0] = range[0] + d0;
  range[1] = range[1] + d1;
}

void ReferenceBackend::fake_quant_observed(float* out, uint8_t* mask, const float* x, size_t n,
                                           const float* range, int qmin, int qmax) {
  float scale;
  int zero_point;
  affine_qparams_rule(range[0], range[1], qmin, qmax, &scale, &zero_point);
  fake_quant_per_tensor(out, mask, x, n, scale, zero_point, qmin, qmax);  // the backend's own
}

}  // namespace bertrt
