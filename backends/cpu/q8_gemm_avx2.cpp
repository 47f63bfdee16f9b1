// qu8s8_gemm_6x16_avx2 (q8_gemm_vnni.h): the u8×s8 GEMM for AVX2 CPUs without VNNI, exact.
// Built with -mavx2 (CMakeLists.txt); run only where cpuid says the CPU has AVX2 (q8_gemm.cpp).
//
// AVX2 has no u8×s8 → int32 dot product. vpmaddubsw saturates its int16 pair sums (255·127·2 >
// 32767), so it needs 7-bit activations (FBGEMM's reduce_range). Here both operands are widened to
// int16 instead, and vpmaddwd sums pairs of exact int16 products into int32 lanes: 16
// multiply-adds an instruction, like vpmaddubsw + vpmaddwd, with no range given up.
//   - A is widened once per call (q8_pack_a: rows of q8_a16_stride(K) int16, zero-padded to an
//     even K), and each row's pair (a[2q], a[2q+1]) is broadcast as one int32 (vpbroadcastd).
//   - W is packed in panels of 16 columns as [⌈K/2⌉][16][2] bytes (columns past N and the k past
//     K are 0), once per weight (q8_pack_w) or per call. One 16-byte load sign-extended to int16
//     (vpmovsxbw) gives 8 columns × 2 values of k.
// Tile: 6 rows × 16 columns = 12 accumulators, taken 8 columns at a time with 1 W vector and 1
// broadcast: 14 of the 16 ymm registers (avx2_tile says why). Each accumulator lane holds one
// output's sum, so there is no horizontal reduction and the epilogue is panel_gemm's vector loop.
#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

#include "backends/cpu/q8_gemm_vnni.h"
#include "backends/cpu/q8_panel_gemm.h"

namespace bertrt::cpu {
namespace {

constexpr int kAvx2MR = 6;

// acc [MR][16] = Σ_q a16[i, 2q..2q+1] · panel[q][j][0..1].
template <int MR>
void avx2_tile(int32_t* acc, const int16_t* A, int lda, const int8_t* panel, int K,
               const PanelPrefetch& pf) {
  const __m256i z = _mm256_setzero_si256();
  __m256i c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z,
          c50 = z, c51 = z;
  const int16_t* a0 = A;
  const int16_t* a1 = a0 + (MR > 1 ? lda : 0);
  const int16_t* a2 = a1 + (MR > 2 ? lda : 0);
  const int16_t* a3 = a2 + (MR > 3 ? lda : 0);
  const int16_t* a4 = a3 + (MR > 4 ? lda : 0);
  const int16_t* a5 = a4 + (MR > 5 ? lda : 0);
  const int k2 = (K + 1) / 2;
  const int8_t* b = panel;
  // Eight columns for all rows, then the other eight, each row's pair broadcast twice: 12
  // accumulators, one W vector and one broadcast-then-product register. Both W vectors live at
  // once (the loop as one pass over the rows) needed 16 registers with a product temporary, and
  // GCC kept an accumulator on the stack: a store-to-load round trip on every step of k, over half
  // of the kernel's samples (BERT-base B1 with BERTRT_Q8_KERNEL=avx2). The broadcasts are asm
  // volatile because GCC otherwise merges a row's two into one register and spills again.
  for (int q = 0; q < k2; ++q, b += 32) {
    if (q < pf.lines) __builtin_prefetch(pf.next + 64 * q, 0, 2);
#define BERTRT_AVX2_ROW(i, h)                                                            \
  if constexpr (MR > i) {                                                               \
    __m256i av;                                                                         \
    const int32_t* pair = reinterpret_cast<const int32_t*>(a##i + 2 * q);               \
    __asm__ volatile("vpbroadcastd %1, %0" : "=x"(av) : "m"(*pair));                    \
    c##i##h = _mm256_add_epi32(c##i##h, _mm256_madd_epi16(av, w));                      \
  }
    {
      const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
      BERTRT_AVX2_ROW(0, 0)
      BERTRT_AVX2_ROW(1, 0)
      BERTRT_AVX2_ROW(2, 0)
      BERTRT_AVX2_ROW(3, 0)
      BERTRT_AVX2_ROW(4, 0)
      BERTRT_AVX2_ROW(5, 0)
    }
    {
      const __m256i w =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16)));
      BERTRT_AVX2_ROW(0, 1)
      BERTRT_AVX2_ROW(1, 1)
      BERTRT_AVX2_ROW(2, 1)
      BERTRT_AVX2_ROW(3, 1)
      BERTRT_AVX2_ROW(4, 1)
      BERTRT_AVX2_ROW(5, 1)
    }
#undef BERTRT_AVX2_ROW
  }
  prefetch_rest(pf, k2);
  auto put = [acc](int i, __m256i lo, __m256i hi) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 16 * i), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 16 * i + 8), hi);
  };
  put(0, c00, c01);
  if constexpr (MR > 1) put(1, c10, c11);
  if constexpr (MR > 2) put(2, c20, c21);
  if constexpr (MR > 3) put(3, c30, c31);
  if constexpr (MR > 4) put(4, c40, c41);
  if constexpr (MR > 5) put(5, c50, c51);
}

struct Avx2Pairs {
  using AType = int16_t;  // q8_pack_a's copy
  static constexpr int kNRP = kAvx2Panel;
  static constexpr int kMR = kAvx2MR;
  static size_t panel_bytes(int K) { return avx2_panel_bytes(K); }
  static void pack_panel(int8_t* dst, const int8_t* W, int ldw, int n, int nr, int K) {
    avx2_pack_panel(dst, W, ldw, n, nr, K);
  }
  static void tile_rows(int mr, int32_t* acc, const int16_t* A, int lda, const int8_t* panel, int K,
                        const PanelPrefetch& pf) {
    switch (mr) {
      case 6:
        return avx2_tile<6>(acc, A, lda, panel, K, pf);
      case 5:
        return avx2_tile<5>(acc, A, lda, panel, K, pf);
      case 4:
        return avx2_tile<4>(acc, A, lda, panel, K, pf);
      case 3:
        return avx2_tile<3>(acc, A, lda, panel, K, pf);
      case 2:
        return avx2_tile<2>(acc, A, lda, panel, K, pf);
      default:
        return avx2_tile<1>(acc, A, lda, panel, K, pf);
    }
  }
};

}  // namespace

void qu8s8_gemm_6x16_avx2(int M, int n0, int n1, int K, const int16_t* a16, int lda16,
                          const int8_t* W, int ldw, const int8_t* w_packed, int8_t* panel_buf,
                          const Q8Epilogue& epi) {
  panel_gemm<Avx2Pairs>(M, n0, n1, K, a16, lda16, W, ldw, w_packed, panel_buf, epi);
}

}  // namespace bertrt::cpu
#endif
