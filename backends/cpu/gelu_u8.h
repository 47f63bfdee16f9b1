// The int8 FFN's GELU and quantization in one pass, fast and with the exact kernels' integers:
//   q[i] = quantize_u8(gelu_erf(x[i]))   (quant_kernels.h, kernels.h; the op's scalar reference)
// A cheap GELU, a piecewise polynomial (gelu_table.h), stands in for the exact one wherever it
// provably rounds to the same integer, and the exact kernels run wherever it might not:
//   t = g·inv with g = the table's GELU, r = rint(t). The exact kernel's t_k = fl(g_k·inv) is
//   within δ = inv·kGeluTableE0 + |t|·(kGeluTableE1 + 2^-22) of t (|g − g_k| ≤ E0 + E1·|g|, below,
//   and one rounding of each product), so |t − r| + δ < 1/2 puts t_k strictly inside r's rounding
//   interval: rint(t_k) = r, and clamping commutes with rint (the bounds are integers).
// A value that fails the test (about 2δ of them: a few in 10,000 for BERT's ranges), a NaN or an
// infinity sends its group of 16 to the exact kernels.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backends/cpu/gelu_table.h"

namespace bertrt::cpu {

// |table GELU − exact kernel's GELU| ≤ kGeluTableE0 + kGeluTableE1·|table GELU|. The table's own
// fit is within 1.2·(1e-8 + 2^-23·|GELU|) of GELU (gelu_table.h), its float evaluation adds about
// 1.5 ulp, the exact kernel is within 5 ulp (tests/unit/ops_test.cpp): E0 is 8× the sum's
// absolute part, E1 twice its relative part. tests/unit/gelu_u8_test.cpp measures the bound.
constexpr float kGeluTableE0 = 1e-7f;
constexpr float kGeluTableE1 = 16.0f / 8388608.0f;  // 16 · 2^-23

// The table's GELU for one value, with the operations of the vector kernel (fma where it has
// one): its scalar form, for the tests. Outside [−6, 6): x above (Φ(6) rounds to 1), 0 below.
inline float gelu_table_f32(float x) {
  if (!(x >= kGeluTableLo && x < kGeluTableHi)) return x < kGeluTableLo ? 0.0f : x;  // NaN: NaN
  const float s = std::fma(x, 1.0f / kGeluTableWidth, -kGeluTableLo / kGeluTableWidth);
  // Clamped: s rounds, and may land just outside [0, 32) at the ends (one interval off inside).
  const float fi = std::fmin(std::fmax(std::floor(s), 0.0f), kGeluTableIntervals - 1.0f);
  const int i = static_cast<int>(fi);
  const float u = x - std::fma(fi, kGeluTableWidth, kGeluTableLo + 0.5f * kGeluTableWidth);
  float p = kGeluTable[kGeluTableDegree][i];
  for (int j = kGeluTableDegree - 1; j >= 0; --j) p = std::fma(p, u, kGeluTable[j][i]);
  return p;
}

// The fast path for AVX-512 F (gelu_u8_avx512f.cpp; call it only where cpuid says so).
// rows × cols values, rows ld apart in both q and x.
void gelu_erf_quantize_u8_avx512f(uint8_t* q, const float* x, int rows, int cols, size_t ld,
                                  float inv, int zero_point);

}  // namespace bertrt::cpu
