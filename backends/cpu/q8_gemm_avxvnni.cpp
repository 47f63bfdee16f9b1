// qu8s8_gemm_6x16_avxvnni (q8_gemm_vnni.h): VEX-encoded vpdpbusd on ymm, for CPUs with AVX-VNNI and
// no AVX-512 (Alder Lake and later, Zen 5 also has it). Built with -mavx2 -mavxvnni
// (CMakeLists.txt); run only where cpuid says the CPU has it (q8_gemm.cpp).
#if defined(__x86_64__) && defined(__AVXVNNI__)
#include <immintrin.h>

#include "backends/cpu/q8_gemm_vnni_impl.h"

namespace bertrt::cpu {
namespace {

struct YmmVex {
  using V = __m256i;
  static constexpr int kLanes = 8;
  // VEX reaches 16 ymm registers: 6 rows give 12 accumulators + 2 W vectors + 1 broadcast. With
  // 8 rows (the EVEX kernels' tile) GCC kept 4 accumulators on the stack, a store-to-load round
  // trip every step of k.
  static constexpr int kMR = 6;
  static V zero() { return _mm256_setzero_si256(); }
  static V load(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const V*>(p)); }
  static V bcast(int32_t x) { return _mm256_set1_epi32(x); }
  static V dot(V c, V a, V b) { return BERTRT_VPDPBUSD("%{vex%} vpdpbusd", c, a, b); }
  static void store(int32_t* p, V v) { _mm256_storeu_si256(reinterpret_cast<V*>(p), v); }
};

}  // namespace

void qu8s8_gemm_6x16_avxvnni(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                             const int8_t* W, int ldw, const int8_t* w_packed, int8_t* panel_buf,
                             const Q8Epilogue& epi) {
  vnni_gemm<YmmVex>(M, n0, n1, K, A, lda, W, ldw, w_packed, panel_buf, epi);
}

}  // namespace bertrt::cpu
#endif
