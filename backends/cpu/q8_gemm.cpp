// See q8_gemm.h.
#include "backends/cpu/q8_gemm.h"

#include <algorithm>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BERTRT_Q8_X86 1
#include <immintrin.h>
#endif

namespace bertrt::cpu {
namespace {

// Rows of A per pass over W: their int16 copy (rows · k16 · 2 bytes) should stay in L2 while W's
// rows stream past once per pass.
constexpr size_t kAChunkBytes = 256 * 1024;

int rows_per_chunk(int k16) {
  const size_t bytes_per_row = static_cast<size_t>(k16 > 0 ? k16 : 1) * 2;
  const int rows = static_cast<int>(kAChunkBytes / bytes_per_row);
  return std::max(4, rows / 4 * 4);
}

// Finishes one output: the raw int32 and/or the dequantized float (the reference's order of
// operations, backends/reference/reference_quant.cpp; no FMA here, so x86 results are identical).
inline void store(const Q8Epilogue& e, int m, int n, int32_t acc) {
  if (e.c) e.c[static_cast<size_t>(m) * e.ldc + n] = acc;
  if (e.out) {
    const int64_t v = int64_t{acc} - int64_t{e.a_zero_point} * e.w_sum[n];
    const float s = e.a_scale * e.w_scale[n];
    float y = static_cast<float>(v) * s;
    if (e.bias) y += e.bias[n];
    e.out[static_cast<size_t>(m) * e.ldo + n] = y;
  }
}

// acc[i][j] += Σ_{k ∈ [k0, K)} A[m+i, k]·W[n+j, k] for an mr × nr tile (the K tail).
inline void tail_sums(int32_t (*acc)[2], int mr, int nr, int k0, int K, const uint8_t* A, int lda,
                      const int8_t* W, int ldw, int m, int n) {
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j) {
      const uint8_t* a = A + static_cast<size_t>(m + i) * lda;
      const int8_t* w = W + static_cast<size_t>(n + j) * ldw;
      int32_t s = 0;
      for (int k = k0; k < K; ++k) s += int32_t{a[k]} * int32_t{w[k]};
      acc[i][j] += s;
    }
}

#ifdef BERTRT_Q8_X86
#define BERTRT_Q8_AVX2 __attribute__((target("avx2")))

BERTRT_Q8_AVX2 inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// acc[i][j] = Σ_{k < k16} a16[i, k]·W[j, k] for an MR × NR tile: per 16 values of k, NR
// sign-extensions of W and MR·NR vpmaddwd (16 int16 products → 8 exact int32 pair sums).
template <int MR, int NR>
BERTRT_Q8_AVX2 inline void tile_avx2(int32_t (*out)[2], const int16_t* a16, int k16,
                                     const int8_t* w, int ldw) {
  __m256i acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_si256();
  for (int k = 0; k < k16; k += 16) {
    __m256i wv[NR];
    for (int j = 0; j < NR; ++j)
      wv[j] = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + static_cast<size_t>(j) * ldw + k)));
    for (int i = 0; i < MR; ++i) {
      const __m256i av = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(a16 + static_cast<size_t>(i) * k16 + k));
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_add_epi32(acc[i][j], _mm256_madd_epi16(av, wv[j]));
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) out[i][j] = hsum_epi32(acc[i][j]);
}

template <int NR>
BERTRT_Q8_AVX2 inline void tile_rows_avx2(int mr, int32_t (*out)[2], const int16_t* a16, int k16,
                                          const int8_t* w, int ldw) {
  switch (mr) {
    case 4: tile_avx2<4, NR>(out, a16, k16, w, ldw); break;
    case 3: tile_avx2<3, NR>(out, a16, k16, w, ldw); break;
    case 2: tile_avx2<2, NR>(out, a16, k16, w, ldw); break;
    default: tile_avx2<1, NR>(out, a16, k16, w, ldw); break;
  }
}
#endif  // BERTRT_Q8_X86

}  // namespace

bool q8_have_avx2() {
#ifdef BERTRT_Q8_X86
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
#else
  return false;
#endif
}

void q8_pack_a(int16_t* a16, const uint8_t* A, int lda, int M, int k16) {
  for (int m = 0; m < M; ++m) {
    const uint8_t* a = A + static_cast<size_t>(m) * lda;
    int16_t* o = a16 + static_cast<size_t>(m) * k16;
    for (int k = 0; k < k16; ++k) o[k] = a[k];
  }
}

#ifdef BERTRT_Q8_X86
BERTRT_Q8_AVX2 void qu8s8_gemm_4x2_avx2(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                                        const Q8PackedA& pa, const int8_t* W, int ldw,
                                        const Q8Epilogue& epi) {
  const int k16 = pa.k16;
  const int chunk = rows_per_chunk(k16);
  for (int mc = 0; mc < M; mc += chunk) {
    const int mc_end = std::min(M, mc + chunk);
    for (int n = n0; n < n1; n += 2) {
      const int nr = std::min(2, n1 - n);
      const int8_t* w = W + static_cast<size_t>(n) * ldw;
      for (int m = mc; m < mc_end; m += 4) {
        const int mr = std::min(4, mc_end - m);
        int32_t acc[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
        const int16_t* a16 = pa.a16 + static_cast<size_t>(m) * k16;
        if (nr == 2)
          tile_rows_avx2<2>(mr, acc, a16, k16, w, ldw);
        else
          tile_rows_avx2<1>(mr, acc, a16, k16, w, ldw);
        tail_sums(acc, mr, nr, k16, K, A, lda, W, ldw, m, n);
        for (int i = 0; i < mr; ++i)
          for (int j = 0; j < nr; ++j) store(epi, m + i, n + j, acc[i][j]);
      }
    }
  }
}
#else
void qu8s8_gemm_4x2_avx2(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                         const Q8PackedA&, const int8_t* W, int ldw, const Q8Epilogue& epi) {
  qu8s8_gemm_scalar(M, n0, n1, K, A, lda, W, ldw, epi);  // not reached: q8_have_avx2() is false
}
#endif

void qu8s8_gemm_scalar(int M, int n0, int n1, int K, const uint8_t* A, int lda, const int8_t* W,
                       int ldw, const Q8Epilogue& epi) {
  for (int n = n0; n < n1; ++n) {
    const int8_t* __restrict w = W + static_cast<size_t>(n) * ldw;
    for (int m = 0; m < M; ++m) {
      const uint8_t* __restrict a = A + static_cast<size_t>(m) * lda;
      int32_t acc = 0;
      for (int k = 0; k < K; ++k) acc += int32_t{a[k]} * int32_t{w[k]};
      store(epi, m, n, acc);
    }
  }
}

}  // namespace bertrt::cpu
