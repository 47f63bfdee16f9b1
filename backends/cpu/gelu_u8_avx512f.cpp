// gelu_erf_quantize_u8_avx512f (gelu_u8.h). Built with -mavx512f (CMakeLists.txt), called only
// where the cpu backend runs its avx512f kernels (cpuid said so). kGeluTable32's six coefficient
// rows live in registers, 32 floats in two zmm each; vpermt2ps picks every lane's interval.
#if defined(__x86_64__) && defined(__AVX512F__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, as f32_gemm_avx512f.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "backends/cpu/gelu_u8.h"

namespace bertrt::cpu {

void gelu_erf_quantize_u8_avx512f(uint8_t* q, const float* x, int rows, int cols, size_t ld,
                                  float inv, int zero_point) {
  const auto& T = kGeluTable32;
  constexpr int D = kGeluTable32.kDegree;
  static_assert(kGeluTable32.kIntervals == 32, "two zmm a coefficient");
  __m512 lo[D + 1], hi[D + 1];
  for (int j = 0; j <= D; ++j) {
    lo[j] = _mm512_load_ps(T.c[j]);
    hi[j] = _mm512_load_ps(T.c[j] + 16);
  }
  const __m512 k = _mm512_set1_ps(1.0f / T.width), b = _mm512_set1_ps(-T.lo / T.width);
  const __m512 width = _mm512_set1_ps(T.width);
  const __m512 first_centre = _mm512_set1_ps(T.lo + 0.5f * T.width);
  const __m512 last = _mm512_set1_ps(T.kIntervals - 1.0f);
  const __m512 table_lo = _mm512_set1_ps(T.lo), table_hi = _mm512_set1_ps(T.hi);
  const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
  const __m512 vinv = _mm512_set1_ps(inv);
  const __m512 d0 = _mm512_set1_ps(gelu_u8_d0(inv)), d1 = _mm512_set1_ps(kGeluU8D1);
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512 qlo = _mm512_set1_ps(static_cast<float>(-zero_point));
  const __m512 qhi = _mm512_set1_ps(static_cast<float>(255 - zero_point));
  const __m512i zp = _mm512_set1_epi32(zero_point);
  constexpr int kFloor = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const size_t n = static_cast<size_t>(cols);
  for (int row = 0; row < rows; ++row, q += ld, x += ld) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
      const __m512 xv = _mm512_loadu_ps(x + i);
      __m512 fi = _mm512_roundscale_ps(_mm512_fmadd_ps(xv, k, b), kFloor);
      fi = _mm512_min_ps(_mm512_max_ps(fi, _mm512_setzero_ps()), last);  // NaN becomes 0
      const __m512i idx = _mm512_cvttps_epi32(fi);
      const __m512 u = _mm512_sub_ps(xv, _mm512_fmadd_ps(fi, width, first_centre));
      __m512 g = _mm512_permutex2var_ps(lo[D], idx, hi[D]);
      for (int j = D - 1; j >= 0; --j)
        g = _mm512_fmadd_ps(g, u, _mm512_permutex2var_ps(lo[j], idx, hi[j]));
      g = _mm512_mask_mov_ps(g, _mm512_cmp_ps_mask(xv, table_hi, _CMP_GE_OQ), xv);
      // 0 below the table, but not at −inf: the exact kernel's −inf·0 is NaN (quantized to 0, not
      // to the zero point), so that lane's g is left to become NaN or ±inf and fail the test.
      const __mmask16 below = _mm512_cmp_ps_mask(xv, table_lo, _CMP_LT_OQ);
      g = _mm512_mask_mov_ps(g, _mm512_mask_cmp_ps_mask(below, xv, neg_inf, _CMP_GT_OQ),
                             _mm512_setzero_ps());
      const __m512 t = _mm512_mul_ps(g, vinv);
      const __m512 r = _mm512_roundscale_ps(t, kNearest);
      const __m512 gap = _mm512_abs_ps(_mm512_sub_ps(t, r));  // exact
      const __m512 test = _mm512_fmadd_ps(_mm512_abs_ps(t), d1, _mm512_add_ps(gap, d0));
      if (_mm512_cmp_ps_mask(test, half, _CMP_LT_OQ) != 0xFFFF) {  // NaN compares false
        gelu_erf_quantize_u8_exact(q + i, x + i, 16, inv, zero_point);
        continue;
      }
      const __m512 c = _mm512_min_ps(_mm512_max_ps(r, qlo), qhi);
      const __m512i v = _mm512_add_epi32(_mm512_cvtps_epi32(c), zp);  // in [0, 255]
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtepi32_epi8(v));
    }
    if (i < n) gelu_erf_quantize_u8_exact(q + i, x + i, n - i, inv, zero_point);
  }
}

}  // namespace bertrt::cpu
#endif
