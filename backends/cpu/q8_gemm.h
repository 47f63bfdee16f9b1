// u8×s8 GEMM tiles for the CPU backend (XNNPACK-style names: data types, tile, instruction set).
//
//   qu8s8_gemm_2x4_avx2: 2 rows of A × 4 rows of W per tile. A is widened to int16 once per call
//     (zero-extend), the 4 rows of W of a column block sign-extended to int16 once per block (they
//     stay in L1 while A streams from L2), and the products summed in pairs by vpmaddwd into
//     int32 lanes. Every int16 product fits (|a·w| ≤ 255·128) and every
//     pair sum fits int32, so the sums are EXACT. vpmaddubsw (u8×s8 with pair sums SATURATED to
//     int16, the usual AVX2 trick) is deliberately not used: 255·127 + 255·127 = 64770 > 32767
//     would clip (which is why FBGEMM needs reduce_range, 7-bit activations, on pre-VNNI CPUs).
//   qu8s8_gemm_scalar: plain int32 loops (the portable fallback; the compiler may vectorise them,
//     which is exact too: C integer arithmetic never saturates).
//
// A tail of K that is not a multiple of 16 is summed by scalar code, so no read ever passes the
// end of a row. The caller checks K ≤ kMaxQ8K (backend.h), which keeps every int32 sum exact.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bertrt::cpu {

// What to do with each finished int32 dot product acc[m][n] (= Σ_k A[m,k]·W[n,k]).
struct Q8Epilogue {
  // Raw: c[m·ldc + n] = acc (when c is non-null).
  int32_t* c = nullptr;
  int ldc = 0;
  // Dequantized: out[m·ldo + n] = float(acc − a_zero_point·w_sum[n]) · (a_scale·w_scale[n]) + bias[n].
  float* out = nullptr;
  int ldo = 0;
  float a_scale = 1.0f;
  int a_zero_point = 0;
  const float* w_scale = nullptr;
  const int32_t* w_sum = nullptr;
  const float* bias = nullptr;  // may be null
};

// A widened to int16: rows [0, M) of K16 = K rounded down to a multiple of 16 (the SIMD part).
struct Q8PackedA {
  const int16_t* a16 = nullptr;
  int k16 = 0;  // stride and width of a16
};

// Columns per tile of the AVX2 kernel: callers split N in multiples of it.
constexpr int kQ8TileN = 4;

// True when the AVX2 tiles can run on this CPU (x86-64 with AVX2, checked once).
bool q8_have_avx2();

// Widens the first k16 columns of A [M, K] (row stride lda) into a16 [M, k16].
void q8_pack_a(int16_t* a16, const uint8_t* A, int lda, int M, int k16);

// Output columns [n0, n1) for all M rows: acc from A (u8, row stride lda), its packed form (AVX2
// path only; pa.a16 may be null on the scalar path) and W [N, K] (row stride ldw), then `epi`.
void qu8s8_gemm_2x4_avx2(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                         const Q8PackedA& pa, const int8_t* W, int ldw, const Q8Epilogue& epi);
void qu8s8_gemm_scalar(int M, int n0, int n1, int K, const uint8_t* A, int lda, const int8_t* W,
                       int ldw, const Q8Epilogue& epi);

}  // namespace bertrt::cpu
