// The int8 FFN's GELU and quantization in one pass, fast and with the exact kernels' integers:
//   q = quantize_u8_kernel(gelu_erf_forward_kernel(x))   (quant_kernels.h, kernels.h: the
//   reference)
// A cheap GELU, a piecewise polynomial (gelu_table.h), stands in for the exact one wherever it
// provably rounds to the same integer, and the exact kernels run wherever it might not:
//   t = g·inv with g = the table's GELU, r = rint(t). The exact kernel's t_k = fl(g_k·inv) is
//   within δ = inv·kGeluTableE0 + |t|·(kGeluTableE1 + 2^-22) of t (|g − g_k| ≤ E0 + E1·|g|, below,
//   and one rounding of each product), so |t − r| + δ < 1/2 puts t_k strictly inside r's rounding
//   interval: rint(t_k) = r, and clamping commutes with rint (the bounds are integers).
// A value that fails the test (about 2δ of them: a few in 10,000 for BERT's ranges), a NaN or an
// infinity sends its group of lanes to the exact kernels.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backends/cpu/f32_gemm.h"
#include "backends/cpu/gelu_table.h"

namespace bertrt::cpu {

// q = the reference's integers for rows × cols values, rows ldq apart in q and ldx apart in x, on
// the SIMD kernel k names: avx512f (kGeluTable32), fma3 (kGeluTable8), scalar: the two exact
// kernels.
void gelu_erf_quantize_u8(F32Kernel k, uint8_t* q, const float* x, int rows, int cols, size_t ldq,
                          size_t ldx, float inv, int zero_point);

// |table GELU − exact kernel's GELU| ≤ kGeluTableE0 + kGeluTableE1·|table GELU|, both tables. A
// table's own fit is within 1.2·(1e-8 + 2^-23·|GELU|) of GELU (gelu_table.h), its float
// evaluation adds a few ulp, the exact kernel is within 5 ulp (tests/unit/ops_test.cpp): E0 is 8×
// the sum's absolute part, E1 about twice its relative part. tests/unit/gelu_u8_test.cpp
// measures the bound.
constexpr float kGeluTableE0 = 1e-7f;
constexpr float kGeluTableE1 = 16.0f / 8388608.0f;  // 16 · 2^-23

// δ's two constants for a given inv (gelu_u8.h's test, |t − r| + d0 + |t|·d1 < 1/2); d0 also
// covers the roundings of the test's own arithmetic (2^-20).
inline float gelu_u8_d0(float inv) { return inv * kGeluTableE0 * 1.001f + 0x1p-20f; }
constexpr float kGeluU8D1 = kGeluTableE1 + 0x1p-22f;

// A table's GELU for one value, with the operations of the vector kernels (fma where they have
// one): its scalar form, for the tests. Outside [lo, hi): x above (Φ(6) rounds to 1), 0 below.
template <int N, int D>
float gelu_table_f32(const GeluTable<N, D>& t, float x) {
  if (!(x >= t.lo && x < t.hi)) return x < t.lo ? 0.0f : x;  // NaN: NaN
  const float s = std::fma(x, 1.0f / t.width, -t.lo / t.width);
  // Clamped: s rounds, and may land just outside [0, N) at the ends (one interval off inside).
  const float fi = std::fmin(std::fmax(std::floor(s), 0.0f), N - 1.0f);
  const int i = static_cast<int>(fi);
  const float u = x - std::fma(fi, t.width, t.lo + 0.5f * t.width);
  float p = t.c[D][i];
  for (int j = D - 1; j >= 0; --j) p = std::fma(p, u, t.c[j][i]);
  return p;
}

// The SIMD paths (gelu_u8_avx512f.cpp, gelu_u8_fma3.cpp; call them only where the CPU has them).
// gelu_erf_quantize_u8_exact is the reference on n values: the groups that fail the test, row
// tails, and the scalar path's rows.
void gelu_erf_quantize_u8_exact(uint8_t* q, const float* x, size_t n, float inv, int zero_point);
void gelu_erf_quantize_u8_avx512f(uint8_t* q, const float* x, int rows, int cols, size_t ldq,
                                  size_t ldx, float inv, int zero_point);
void gelu_erf_quantize_u8_fma3(uint8_t* q, const float* x, int rows, int cols, size_t ldq,
                               size_t ldx, float inv, int zero_point);

}  // namespace bertrt::cpu
