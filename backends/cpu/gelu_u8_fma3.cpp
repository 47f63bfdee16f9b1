// gelu_erf_quantize_u8_fma3 (gelu_u8.h). Built with -mavx2 -mfma (CMakeLists.txt), called only
// where the cpu backend runs its fma3 kernels. vpermps looks up 8 floats from one ymm: so the
// table here is kGeluTable8, 8 intervals of degree 9 (one ymm a coefficient, 10 of 16 registers).
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "backends/cpu/gelu_u8.h"

namespace bertrt::cpu {

void gelu_erf_quantize_u8_fma3(uint8_t* q, const float* x, int rows, int cols, size_t ld, float inv,
                               int zero_point) {
  const auto& T = kGeluTable8;
  constexpr int D = kGeluTable8.kDegree;
  static_assert(kGeluTable8.kIntervals == 8, "one ymm a coefficient");
  __m256 c[D + 1];
  for (int j = 0; j <= D; ++j) c[j] = _mm256_load_ps(T.c[j]);
  const __m256 k = _mm256_set1_ps(1.0f / T.width), b = _mm256_set1_ps(-T.lo / T.width);
  const __m256 width = _mm256_set1_ps(T.width);
  const __m256 first_centre = _mm256_set1_ps(T.lo + 0.5f * T.width);
  const __m256 last = _mm256_set1_ps(T.kIntervals - 1.0f);
  const __m256 table_lo = _mm256_set1_ps(T.lo), table_hi = _mm256_set1_ps(T.hi);
  const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
  const __m256 vinv = _mm256_set1_ps(inv);
  const __m256 d0 = _mm256_set1_ps(gelu_u8_d0(inv)), d1 = _mm256_set1_ps(kGeluU8D1);
  const __m256 half = _mm256_set1_ps(0.5f);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 qlo = _mm256_set1_ps(static_cast<float>(-zero_point));
  const __m256 qhi = _mm256_set1_ps(static_cast<float>(255 - zero_point));
  const __m128i zp = _mm_set1_epi32(zero_point);
  constexpr int kFloor = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const size_t n = static_cast<size_t>(cols);
  for (int row = 0; row < rows; ++row, q += ld, x += ld) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const __m256 xv = _mm256_loadu_ps(x + i);
      __m256 fi = _mm256_round_ps(_mm256_fmadd_ps(xv, k, b), kFloor);
      // maxps returns its second operand for NaN: NaN becomes 0 (the lane fails the test later).
      fi = _mm256_min_ps(_mm256_max_ps(fi, _mm256_setzero_ps()), last);
      const __m256i idx = _mm256_cvttps_epi32(fi);
      const __m256 u = _mm256_sub_ps(xv, _mm256_fmadd_ps(fi, width, first_centre));
      __m256 g = _mm256_permutevar8x32_ps(c[D], idx);
      for (int j = D - 1; j >= 0; --j)
        g = _mm256_fmadd_ps(g, u, _mm256_permutevar8x32_ps(c[j], idx));
      g = _mm256_blendv_ps(g, xv, _mm256_cmp_ps(xv, table_hi, _CMP_GE_OQ));
      // 0 below the table but not at −inf (as the avx512f path: that lane must fail the test).
      const __m256 below = _mm256_and_ps(_mm256_cmp_ps(xv, table_lo, _CMP_LT_OQ),
                                         _mm256_cmp_ps(xv, neg_inf, _CMP_GT_OQ));
      g = _mm256_andnot_ps(below, g);
      const __m256 t = _mm256_mul_ps(g, vinv);
      const __m256 r = _mm256_round_ps(t, kNearest);
      const __m256 gap = _mm256_and_ps(_mm256_sub_ps(t, r), abs_mask);  // exact
      const __m256 test = _mm256_fmadd_ps(_mm256_and_ps(t, abs_mask), d1, _mm256_add_ps(gap, d0));
      if (_mm256_movemask_ps(_mm256_cmp_ps(test, half, _CMP_LT_OQ)) != 0xFF) {  // NaN: false
        gelu_erf_quantize_u8_exact(q + i, x + i, 8, inv, zero_point);
        continue;
      }
      const __m256i v = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, qlo), qhi));
      const __m128i lo4 = _mm_add_epi32(_mm256_castsi256_si128(v), zp);
      const __m128i hi4 = _mm_add_epi32(_mm256_extracti128_si256(v, 1), zp);  // all in [0, 255]
      const __m128i w = _mm_packus_epi32(lo4, hi4);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), _mm_packus_epi16(w, w));
    }
    if (i < n) gelu_erf_quantize_u8_exact(q + i, x + i, n - i, inv, zero_point);
  }
}

}  // namespace bertrt::cpu
#endif
