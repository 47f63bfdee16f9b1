// f32_gemm_16x6_fma3 (f32_gemm.h). Built with -mavx2 -mfma (CMakeLists.txt); run only where cpuid
// and XGETBV say the CPU and the OS have them.
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "backends/cpu/f32_attention_impl.h"
#include "backends/cpu/f32_gemm_impl.h"
#include "backends/cpu/f32_gemm_isa.h"

namespace bertrt::cpu {
namespace {

struct Ymm {
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kNR = 6;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_load_ps(p); }
  static V bcast(float x) { return _mm256_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static void store(float* p, V v) { _mm256_store_ps(p, v); }
  static V loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  // f32_attention_impl.h's operations.
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V round(V x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2(V n) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static V select_lt(V a, V b, V x, V y) {
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
  }
  // 8 × 8: pairs of rows interleaved, 4 × 4 blocks within 128-bit lanes (u[4g + c] holds column
  // 4L + c of rows 4g..4g+3 in lane L), then the two lanes swapped across.
  static void transpose(float* dst, size_t ldd, const float* src, size_t lds) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 8; g += 4) {
      r[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
      r[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xEE);
      r[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
      r[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
      _mm256_storeu_ps(dst + c * ldd, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
      _mm256_storeu_ps(dst + (4 + c) * ldd, _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
    }
  }
};

}  // namespace

void f32_pack_x_fma3(float* P, const float* X, int ldx, int M, int K, int p0, int p1) {
  pack_x_transposed<Ymm>(P, X, ldx, M, K, p0, p1);
}

size_t f32_packed_w_floats_fma3(int N, int K) { return packed_w_floats<Ymm>(N, K); }

void f32_pack_w_fma3(float* Wp, const float* W, int N, int K) { pack_w<Ymm>(Wp, W, K, 0, N, 0, K); }

size_t f32_scratch_floats_fma3(int M, int n0, int n1, int K) {
  return scratch_floats<Ymm>(M, n0, n1, K);
}

void f32_gemm_16x6_fma3(int M, int n0, int n1, int K, const float* P, const float* W, int ldw,
                        const float* bias, float* Y, int ldy, float* S) {
  gemm_xwt<Ymm>(M, n0, n1, K, P, W, ldw, bias, Y, ldy, S);
}

size_t f32_packed_wb_floats_fma3(int N, int K) { return packed_wb_floats<Ymm>(N, K); }

void f32_pack_wb_fma3(float* Wp, const float* W, int N, int K, int t0, int t1) {
  pack_wb<Ymm>(Wp, W, N, K, t0, t1);
}

void f32_gemm_bcast_6x16_fma3(int M, int n0, int n1, int K, const float* X, int ldx,
                              const float* Wp, const float* bias, float* Y, int ldy) {
  gemm_xwt_bcast<Ymm, 6>(M, n0, n1, K, X, ldx, Wp, bias, Y, ldy);
}

void f32_attention_fma3(float* ctx, int ldc, const float* q, const float* key, const float* v,
                        int ld, const float* mask, int T, int HS, float scale, int r0, int r1,
                        float* scratch) {
  attention_rows<Ymm>(ctx, ldc, q, key, v, ld, mask, T, HS, scale, r0, r1, scratch);
}

}  // namespace bertrt::cpu
#endif
