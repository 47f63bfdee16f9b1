// f32_gemm_16x6_fma3 (f32_gemm.h). Built with -mavx2 -mfma (CMakeLists.txt); run only where cpuid
// and XGETBV say the CPU and the OS have them.
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

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
};

}  // namespace

void f32_pack_x_fma3(float* P, const float* X, int ldx, int M, int K, int p0, int p1) {
  pack_x<2 * Ymm::kLanes>(P, X, ldx, M, K, p0, p1);
}

size_t f32_scratch_floats_fma3(int M, int n0, int n1, int K) {
  return scratch_floats<Ymm>(M, n0, n1, K);
}

void f32_gemm_16x6_fma3(int M, int n0, int n1, int K, const float* P, const float* W, int ldw,
                        const float* bias, float* Y, int ldy, float* S) {
  gemm_xwt<Ymm>(M, n0, n1, K, P, W, ldw, bias, Y, ldy, S);
}

}  // namespace bertrt::cpu
#endif
