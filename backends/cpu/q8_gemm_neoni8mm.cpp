// qu8s8_gemm_8x8_neoni8mm (q8_gemm_vnni.h): usmmla, the int8 matrix multiply (FEAT_I8MM, optional
// from Armv8.2-A and required from 8.6: Cortex-A510/A710/X2 and later, Neoverse N2/V1/V2,
// Graviton 3/4). One instruction multiplies a 2 × 8 block of u8 (two rows of A, 8 values of k
// each) by a 2 × 8 block of s8 (two columns of W) and adds the 2 × 2 int32 results: u8 × s8
// natively (no 0x80 shift as with sdot), 32 exact multiply-adds where sdot does 16. Built with
// -march=armv8.2-a+i8mm (CMakeLists.txt); run only where HWCAP2 says the CPU has it (q8_gemm.cpp).
#if defined(__aarch64__) && defined(__ARM_FEATURE_MATMUL_INT8)
#include <arm_neon.h>

#include <cstring>

#include "backends/cpu/q8_gemm_vnni.h"
#include "backends/cpu/q8_panel_gemm.h"

namespace bertrt::cpu {
namespace {

// acc [MR][kI8mmPanel] = Σ_k A[i, k]·W[j, k] for one panel (i8mm_pack_panel's layout: per 8 values
// of k, columns (0, 1), (2, 3), ... as 16-byte pairs). Rows are taken in pairs; a row past mr (the
// second of an odd mr's last pair) reads row 0 again, its sums dropped. The last K % 8 values of
// each row are copied into a zeroed block first, so no load passes the end of a row (the panel is
// zero there).
template <int MR>
void i8mm_tile(int mr, int32_t* acc, const uint8_t* A, int lda, const int8_t* panel, int K) {
  constexpr int NRP = kI8mmPanel, RP = MR / 2, CP = NRP / 2;
  const uint8_t* row[MR];
  for (int i = 0; i < MR; ++i) row[i] = A + static_cast<size_t>(i < mr ? i : 0) * lda;
  int32x4_t c[RP][CP];
  for (int p = 0; p < RP; ++p)
    for (int q = 0; q < CP; ++q) c[p][q] = vdupq_n_s32(0);
  const int k8 = K / 8, rem = K - 8 * k8;
  const int8_t* w = panel;
  for (int kb = 0; kb < k8; ++kb, w += 8 * NRP) {
    int8x16_t b[CP];
    for (int q = 0; q < CP; ++q) b[q] = vld1q_s8(w + 16 * q);
    for (int p = 0; p < RP; ++p) {
      const uint8x16_t a =
          vcombine_u8(vld1_u8(row[2 * p] + 8 * kb), vld1_u8(row[2 * p + 1] + 8 * kb));
      for (int q = 0; q < CP; ++q) c[p][q] = vusmmlaq_s32(c[p][q], a, b[q]);
    }
  }
  if (rem) {
    uint8_t tail[MR][8] = {};
    for (int i = 0; i < MR; ++i) std::memcpy(tail[i], row[i] + 8 * k8, rem);
    int8x16_t b[CP];
    for (int q = 0; q < CP; ++q) b[q] = vld1q_s8(w + 16 * q);
    for (int p = 0; p < RP; ++p) {
      const uint8x16_t a = vcombine_u8(vld1_u8(tail[2 * p]), vld1_u8(tail[2 * p + 1]));
      for (int q = 0; q < CP; ++q) c[p][q] = vusmmlaq_s32(c[p][q], a, b[q]);
    }
  }
  // c[p][q] = rows (2p, 2p + 1) × columns (2q, 2q + 1), row by row.
  for (int p = 0; p < RP; ++p)
    for (int q = 0; q < CP; ++q) {
      vst1_s32(acc + (2 * p) * NRP + 2 * q, vget_low_s32(c[p][q]));
      vst1_s32(acc + (2 * p + 1) * NRP + 2 * q, vget_high_s32(c[p][q]));
    }
}

// The i8mm kernel as panel_gemm sees it: 8 rows (4 row pairs × 4 column pairs: 16 accumulators of
// the 32 NEON registers) × 8 columns.
struct I8mmPanels {
  using AType = uint8_t;
  static constexpr int kNRP = kI8mmPanel;
  static constexpr int kMR = 8;
  static size_t panel_bytes(int K) { return i8mm_panel_bytes(K); }
  static void pack_panel(int8_t* dst, const int8_t* W, int ldw, int n, int nr, int K) {
    i8mm_pack_panel(dst, W, ldw, n, nr, K);
  }
  // The next panel is left to the hardware prefetcher (PanelPrefetch measured on the x86 vector
  // kernels only).
  static void tile_rows(int mr, int32_t* acc, const uint8_t* A, int lda, const int8_t* panel, int K,
                        const PanelPrefetch&) {
    // The fewest row pairs that cover mr (M = 1, the pooler at batch 1, runs one pair).
    if (mr <= 2) return i8mm_tile<2>(mr, acc, A, lda, panel, K);
    if (mr <= 4) return i8mm_tile<4>(mr, acc, A, lda, panel, K);
    if (mr <= 6) return i8mm_tile<6>(mr, acc, A, lda, panel, K);
    i8mm_tile<8>(mr, acc, A, lda, panel, K);
  }
};

}  // namespace

void qu8s8_gemm_8x8_neoni8mm(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                             const int8_t* W, int ldw, const int8_t* w_packed, int8_t* panel_buf,
                             const Q8Epilogue& epi) {
  panel_gemm<I8mmPanels>(M, n0, n1, K, A, lda, W, ldw, w_packed, panel_buf, epi);
}

}  // namespace bertrt::cpu
#elif defined(__aarch64__) && defined(BERTRT_Q8_I8MM_FILE)
#error "built for +i8mm (CMakeLists.txt), but the compiler did not define __ARM_FEATURE_MATMUL_INT8"
#endif
