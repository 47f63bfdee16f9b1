// f32_gemm_32x12_avx512f (f32_gemm.h). Built with -mavx512f -mavx512bw -mavx512dq -mavx512vl
// -mfma (CMakeLists.txt); run only where cpuid and XGETBV say the CPU and the OS have them.
#if defined(__x86_64__) && defined(__AVX512F__)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics (maxps, rndscaleps, unpcklps, ...) pass a self-initialised
// "undefined" operand that -W(maybe-)uninitialized reports once inlined (GCC bug 105593, fixed in
// GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "backends/cpu/f32_attention_impl.h"
#include "backends/cpu/f32_gemm_impl.h"
#include "backends/cpu/f32_gemm_isa.h"

namespace bertrt::cpu {
namespace {

struct Zmm {
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kNR = 12;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_load_ps(p); }
  static V bcast(float x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static void store(float* p, V v) { _mm512_store_ps(p, v); }
  static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  // f32_attention_impl.h's operations.
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V round(V x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static V pow2(V n) {
    const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
  }
  static V select_lt(V a, V b, V x, V y) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x);
  }
  // 16 × 16: pairs of rows interleaved, then 4 × 4 blocks within 128-bit lanes (u[4g + c] holds
  // column 4L + c of rows 4g..4g+3 in lane L), then the lanes themselves transposed in two steps.
  static void transpose(float* dst, size_t ldd, const float* src, size_t lds) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * lds);
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 16; g += 4) {
      r[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
      r[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xEE);
      r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
      r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
      t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);      // lanes 0, 2 of rows 0–7
      t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);  // lanes 1, 3 of rows 0–7
      t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
      t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
    }
    for (int c = 0; c < 4; ++c) {
      _mm512_storeu_ps(dst + c * ldd, _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88));
      _mm512_storeu_ps(dst + (8 + c) * ldd, _mm512_shuffle_f32x4(t[c], t[8 + c], 0xDD));
      _mm512_storeu_ps(dst + (4 + c) * ldd, _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88));
      _mm512_storeu_ps(dst + (12 + c) * ldd, _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xDD));
    }
  }
};

}  // namespace

void f32_pack_x_avx512f(float* P, const float* X, int ldx, int M, int K, int p0, int p1) {
  pack_x_transposed<Zmm>(P, X, ldx, M, K, p0, p1);
}

size_t f32_packed_w_floats_avx512f(int N, int K) { return packed_w_floats<Zmm>(N, K); }

void f32_pack_w_avx512f(float* Wp, const float* W, int N, int K) {
  pack_w<Zmm>(Wp, W, K, 0, N, 0, K);
}

size_t f32_scratch_floats_avx512f(int M, int n0, int n1, int K) {
  return scratch_floats<Zmm>(M, n0, n1, K);
}

void f32_gemm_32x12_avx512f(int M, int n0, int n1, int K, const float* P, const float* W, int ldw,
                            const float* bias, float* Y, int ldy, float* S) {
  gemm_xwt<Zmm>(M, n0, n1, K, P, W, ldw, bias, Y, ldy, S);
}

size_t f32_packed_wb_floats_avx512f(int N, int K) { return packed_wb_floats<Zmm>(N, K); }

void f32_pack_wb_avx512f(float* Wp, const float* W, int N, int K, int t0, int t1) {
  pack_wb<Zmm>(Wp, W, N, K, t0, t1);
}

void f32_gemm_bcast_12x32_avx512f(int M, int n0, int n1, int K, const float* X, int ldx,
                                  const float* Wp, const float* bias, float* Y, int ldy) {
  gemm_xwt_bcast<Zmm, 12>(M, n0, n1, K, X, ldx, Wp, bias, Y, ldy);
}

void f32_attention_avx512f(float* ctx, int ldc, const float* q, const float* key, const float* v,
                           int ld, const float* mask, int T, int HS, float scale, int r0, int r1,
                           float* scratch) {
  attention_rows<Zmm>(ctx, ldc, q, key, v, ld, mask, T, HS, scale, r0, r1, scratch);
}

}  // namespace bertrt::cpu
#endif
