// gelu_erf_quantize_u8_fma3 (gelu_u8.h). Built with -mavx2 -mfma (CMakeLists.txt), called only
// where the cpu backend runs its fma3 kernels. vpermps looks up 8 floats from one ymm: so the
// table here is kGeluTable8, 8 intervals of degree 9 (one ymm a coefficient, 10 of 16 registers).
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "backends/cpu/gelu_u8_impl.h"

namespace bertrt::cpu {
namespace {

struct Ymm {
  using V = __m256;
  using I = __m256i;
  using M = __m256;  // all-ones lanes
  static constexpr int kLanes = 8;
  static constexpr const auto& kTable = kGeluTable8;
  static_assert(kGeluTable8.kIntervals == 8, "one ymm a coefficient");
  struct Coeffs {
    V c[kGeluTable8.kDegree + 1];
    explicit Coeffs(const decltype(kGeluTable8)& t) {
      for (int j = 0; j <= t.kDegree; ++j) c[j] = _mm256_load_ps(t.c[j]);
    }
    V lookup(int j, I idx) const { return _mm256_permutevar8x32_ps(c[j], idx); }
  };
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V abs(V a) { return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }
  static I set1_i(int v) { return _mm256_set1_epi32(v); }
  static I interval(V s, I last) { return _mm256_min_epi32(_mm256_cvttps_epi32(s), last); }
  static V to_float(I i) { return _mm256_cvtepi32_ps(i); }
  static V gap(V t) {
    return abs(_mm256_sub_ps(t, _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
  }
  static M ge(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static M lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M gt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static M both(M a, M b) { return _mm256_and_ps(a, b); }
  static bool all(M m) { return _mm256_movemask_ps(m) == 0xFF; }
  static V select(M m, V if_set, V otherwise) { return _mm256_blendv_ps(otherwise, if_set, m); }
  // vcvtps2dq rounds to nearest even (MXCSR's default, as the exact path's nearbyint); clamped
  // to [0, 255] as int32, so that the two saturating packs keep every value.
  static void store_q(uint8_t* q, V t, I zero_point) {
    __m256i v = _mm256_add_epi32(_mm256_cvtps_epi32(t), zero_point);
    v = _mm256_min_epi32(_mm256_max_epi32(v, _mm256_setzero_si256()), _mm256_set1_epi32(255));
    const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(q), _mm_packus_epi16(w, w));
  }
};

}  // namespace

void gelu_erf_quantize_u8_fma3(uint8_t* q, const float* x, int rows, int cols, size_t ldq,
                               size_t ldx, float inv, int zero_point) {
  gelu_u8_rows<Ymm>(q, x, rows, cols, ldq, ldx, inv, zero_point);
}

}  // namespace bertrt::cpu
#endif
