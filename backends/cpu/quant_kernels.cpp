// See quant_kernels.h. -fno-trapping-math (as in kernels.cpp) lets GCC if-convert the selects and
// vectorise nearbyint (roundps with the inexact exception suppressed, SSE4.1+ / the v3 clone).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "backends/cpu/quant_kernels.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/simd.h"
#include "core/fp_contract.h"

namespace bertrt::cpu {

BERTRT_CPU_CLONES void min_max_kernel(float* mn, float* mx, const float* x, size_t n) {
  // 8 independent lanes (simd.h's f32x8), combined at the end; min and max are exact in any order.
  f32x8 lo, hi;
  for (int k = 0; k < 8; ++k) lo[k] = hi[k] = x[0];
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x8 v;
    std::memcpy(&v, x + i, sizeof v);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  float l = x[0], h = x[0];
  for (; i < n; ++i) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  for (int k = 0; k < 8; ++k) {
    l = lo[k] < l ? lo[k] : l;
    h = hi[k] > h ? hi[k] : h;
  }
  *mn = l;
  *mx = h;
}

BERTRT_CPU_CLONES void absmax_rows_kernel(float* out, const float* x, int r0, int r1, int cols) {
  for (int r = r0; r < r1; ++r) {
    const float* __restrict row = x + static_cast<size_t>(r) * cols;
    f32x8 acc = {};
    int c = 0;
    for (; c + 8 <= cols; c += 8) {
      f32x8 v;
      std::memcpy(&v, row + c, sizeof v);
      const f32x8 a = v < 0.0f ? -v : v;  // |v|; NaN stays NaN and loses every comparison below
      acc = a > acc ? a : acc;
    }
    float m = 0.0f;
    for (; c < cols; ++c) {
      const float a = std::fabs(row[c]);
      m = a > m ? a : m;
    }
    for (int k = 0; k < 8; ++k) m = acc[k] > m ? acc[k] : m;
    out[r] = m;
  }
}

BERTRT_CPU_CLONES void fake_quant_kernel(float* out, uint8_t* mask, const float* x, size_t n,
                                         float scale, float inv, int zero_point, int qmin,
                                         int qmax) {
  // No __restrict on out/x: out may alias x (each element is read before it is written).
  const float zp = static_cast<float>(zero_point);
  const float lo = static_cast<float>(qmin), hi = static_cast<float>(qmax);
  if (mask) {
    uint8_t* __restrict mk = mask;
    for (size_t i = 0; i < n; ++i) {
      const float q = std::nearbyint(x[i] * inv) + zp;
      const float c = q < lo ? lo : (q > hi ? hi : q);
      mk[i] = static_cast<uint8_t>((q >= lo) & (q <= hi));
      out[i] = (c - zp) * scale;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      const float q = std::nearbyint(x[i] * inv) + zp;
      const float c = q < lo ? lo : (q > hi ? hi : q);
      out[i] = (c - zp) * scale;
    }
  }
}

BERTRT_CPU_CLONES void fake_quant_backward_kernel(float* dinp, const uint8_t* mask,
                                                  const float* dout, size_t n) {
  float* __restrict dx = dinp;
  const uint8_t* __restrict mk = mask;
  const float* __restrict dy = dout;
  for (size_t i = 0; i < n; ++i) dx[i] += mk[i] ? dy[i] : 0.0f;
}

// Clamped in float to [−zero_point, 255 − zero_point] first, then rounded: rounding is monotonic
// and fixes integers, so round(clamp(t)) = clamp(round(t)) — the same integers, while the int
// conversion only ever sees values it can hold (no 0x80000000 for |t| ≥ 2³¹) and the add and the
// narrowing need no saturation. NaN fails `t > lo` and gives 0, as before.
BERTRT_CPU_CLONES_V4 void quantize_u8_kernel(uint8_t* q, const float* x, size_t n, float inv,
                                             int zero_point) {
  uint8_t* __restrict o = q;
  const float* __restrict in = x;
  const float lo = static_cast<float>(-zero_point), hi = static_cast<float>(255 - zero_point);
  for (size_t i = 0; i < n; ++i) {
    float t = in[i] * inv;
    t = t > lo ? t : lo;
    t = t < hi ? t : hi;
    o[i] = static_cast<uint8_t>(static_cast<int>(std::nearbyint(t)) + zero_point);
  }
}

// As the reference's loop (reference_quant.cpp): the product rounded on its own on every target.
BERTRT_CPU_CLONES_V4 BERTRT_NO_FP_CONTRACT void embedding_forward_s8_rows(
    float* out, const int32_t* ids, const int8_t* q, const float* scale, int r0, int r1, int C) {
  for (int i = r0; i < r1; ++i) {
    float* __restrict o = out + static_cast<size_t>(i) * C;
    const int8_t* __restrict row = q + static_cast<size_t>(ids[i]) * C;
    const float s = scale[ids[i]];
    for (int c = 0; c < C; ++c) {
      const float v = s * static_cast<float>(row[c]);
      o[c] += v;
    }
  }
}

}  // namespace bertrt::cpu
