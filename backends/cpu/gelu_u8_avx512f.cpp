// gelu_erf_quantize_u8_avx512f (gelu_u8.h). Built with -mavx512f -mavx512dq (CMakeLists.txt),
// called only where the cpu backend runs its avx512f kernels (cpuid said so: F/BW/DQ/VL).
// kGeluTable32's six coefficient rows live in registers, 32 floats in two zmm each; vpermt2ps
// picks every lane's interval.
#if defined(__x86_64__) && defined(__AVX512F__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, as f32_gemm_avx512f.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "backends/cpu/gelu_u8_impl.h"

namespace bertrt::cpu {
namespace {

struct Zmm {
  using V = __m512;
  using I = __m512i;
  using M = __mmask16;
  static constexpr int kLanes = 16;
  static constexpr const auto& kTable = kGeluTable32;
  static_assert(kGeluTable32.kIntervals == 32, "two zmm a coefficient");
  struct Coeffs {
    V lo[kGeluTable32.kDegree + 1], hi[kGeluTable32.kDegree + 1];
    explicit Coeffs(const decltype(kGeluTable32)& t) {
      for (int j = 0; j <= t.kDegree; ++j)
        lo[j] = _mm512_load_ps(t.c[j]), hi[j] = _mm512_load_ps(t.c[j] + 16);
    }
    V lookup(int j, I idx) const { return _mm512_permutex2var_ps(lo[j], idx, hi[j]); }
  };
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V abs(V a) { return _mm512_abs_ps(a); }
  static I set1_i(int v) { return _mm512_set1_epi32(v); }
  static I interval(V s, I last) { return _mm512_min_epi32(_mm512_cvttps_epi32(s), last); }
  static V to_float(I i) { return _mm512_cvtepi32_ps(i); }
  // vreduceps: t − rint(t), exact, in one instruction (AVX-512DQ).
  static V gap(V t) { return abs(_mm512_reduce_ps(t, _MM_FROUND_TO_NEAREST_INT)); }
  static M ge(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static M lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M gt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static M both(M a, M b) { return static_cast<M>(a & b); }
  static bool all(M m) { return m == 0xFFFF; }
  static V select(M m, V if_set, V otherwise) { return _mm512_mask_blend_ps(m, otherwise, if_set); }
  // vcvtps2dq rounds to nearest even (MXCSR's default, as the exact path's nearbyint); the
  // unsigned narrowing saturates at 255 once negatives are 0.
  static void store_q(uint8_t* q, V t, I zero_point) {
    const __m512i v = _mm512_add_epi32(_mm512_cvtps_epi32(t), zero_point);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q),
                     _mm512_cvtusepi32_epi8(_mm512_max_epi32(v, _mm512_setzero_si512())));
  }
};

}  // namespace

void gelu_erf_quantize_u8_avx512f(uint8_t* q, const float* x, int rows, int cols, size_t ldq,
                                  size_t ldx, float inv, int zero_point) {
  gelu_u8_rows<Zmm>(q, x, rows, cols, ldq, ldx, inv, zero_point);
}

}  // namespace bertrt::cpu
#endif
