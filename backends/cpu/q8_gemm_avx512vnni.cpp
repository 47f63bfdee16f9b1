// qu8s8_gemm_8x32_avx512vnni and qu8s8_gemm_8x16_avx512vnni256 (q8_gemm_vnni.h). Built with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni (CMakeLists.txt); run only where cpuid and XGETBV
// say the CPU and the OS have them (q8_gemm.cpp).
#if defined(__x86_64__) && defined(__AVX512VNNI__) && defined(__AVX512VL__)
#include <immintrin.h>

#include "backends/cpu/q8_gemm_vnni_impl.h"

namespace bertrt::cpu {
namespace {

struct Zmm {
  using V = __m512i;
  static constexpr int kLanes = 16;
  static constexpr int kMR = 8;  // 16 accumulators + 2 W vectors + 1 broadcast of 32 registers
  static V zero() { return _mm512_setzero_si512(); }
  static V load(const int8_t* p) { return _mm512_loadu_si512(p); }
  static V bcast(int32_t x) { return _mm512_set1_epi32(x); }
  static V dot(V c, V a, V b) { return BERTRT_VPDPBUSD("vpdpbusd", c, a, b); }
  static void store(int32_t* p, V v) { _mm512_storeu_si512(p, v); }
};

struct Ymm {
  using V = __m256i;
  static constexpr int kLanes = 8;
  static constexpr int kMR = 8;  // EVEX: 32 ymm registers
  static V zero() { return _mm256_setzero_si256(); }
  static V load(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const V*>(p)); }
  static V bcast(int32_t x) { return _mm256_set1_epi32(x); }
  static V dot(V c, V a, V b) { return BERTRT_VPDPBUSD("vpdpbusd", c, a, b); }
  static void store(int32_t* p, V v) { _mm256_storeu_si256(reinterpret_cast<V*>(p), v); }
};

}  // namespace

void qu8s8_gemm_8x32_avx512vnni(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                                const int8_t* W, int ldw, const int8_t* w_packed, int8_t* panel_buf,
                                const Q8Epilogue& epi) {
  vnni_gemm<Zmm>(M, n0, n1, K, A, lda, W, ldw, w_packed, panel_buf, epi);
}

void qu8s8_gemm_8x16_avx512vnni256(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                                   const int8_t* W, int ldw, const int8_t* w_packed,
                                   int8_t* panel_buf, const Q8Epilogue& epi) {
  vnni_gemm<Ymm>(M, n0, n1, K, A, lda, W, ldw, w_packed, panel_buf, epi);
}

}  // namespace bertrt::cpu
#endif
