// qu8s8_gemm_32x32_amx (q8_gemm_vnni.h): the u8×s8 GEMM on Intel AMX (Sapphire Rapids and later).
// Built with -mamx-tile -mamx-int8 and the AVX-512 flags of the VNNI file (CMakeLists.txt: the
// epilogue is then 16 lanes wide); run only where cpuid says the CPU has AMX-INT8 and AVX-512 VNNI
// and Linux granted this process the tile state (q8_gemm.cpp: arch_prctl ARCH_REQ_XCOMP_PERM).
//
// TDPBUSD multiplies a 16 × 64-byte tile of u8 A by a 16 × 64-byte tile of s8 B in the VNNI layout
// (row r holds 16 columns × 4 values of k: k = 4r .. 4r + 3) and adds the exact 4-product sums
// into a 16 × 16 int32 tile: 16,384 multiply-adds an instruction, with vpdpbusd's arithmetic (no
// saturation, no int16 step). That B layout is the zmm VNNI kernel's packed panel ([⌈K/4⌉][32][4]
// bytes): columns 0–15 of a 64-value step of k are 16 rows of 64 bytes at a stride of 128, columns
// 16–31 the same 64 bytes further. So AMX reads the weights avx512vnni packed, unchanged.
// Tile: 32 rows × 32 columns = 4 C tiles, 2 A tiles, 2 B tiles (all 8 tile registers). Rows past M
// and k past K come from zero-padded copies, made only for the last block of rows and the last
// step of k, so no tile load reads past a row or a panel.
// GCC spells the -mamx-* macros __AMX_INT8__/__AMX_TILE__, clang __AMXINT8__/__AMXTILE__.
#if defined(__x86_64__) && (defined(__AMX_INT8__) || defined(__AMXINT8__)) && \
    (defined(__AMX_TILE__) || defined(__AMXTILE__))
#include <immintrin.h>

#include "backends/cpu/q8_gemm_vnni_impl.h"

namespace bertrt::cpu {
namespace {

constexpr int kAmxMR = 32;
constexpr int kAmxNRP = kVnniPanelZmm;  // 32
constexpr int kAmxKStep = 64;           // bytes of k per tile row

// The tile configuration (palette 1): tiles 0–3 the 16 × 16 int32 C blocks, 4–5 A, 6–7 B, every
// one 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

// acc [32][32] = Σ_k A[i, k]·panel, for mr ≤ 32 rows of A (row stride lda).
void amx_tile_rows(int mr, int32_t* acc, const uint8_t* A, int lda, const int8_t* panel, int K) {
  const int ksteps = (K + kAmxKStep - 1) / kAmxKStep;
  const int bstride = kAmxNRP * 4;  // bytes per row of k4 in the panel
  // A's rows past mr and k past K are zero here, and so are B's rows past ⌈K/4⌉.
  alignas(64) uint8_t a_pad[kAmxMR * kAmxKStep];
  alignas(64) int8_t b_pad[16 * kAmxNRP * 4];
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int s = 0; s < ksteps; ++s) {
    const int k0 = s * kAmxKStep, kb = K - k0 < kAmxKStep ? K - k0 : kAmxKStep;
    const uint8_t* as = A + k0;
    int as_ld = lda;
    if (mr < kAmxMR || kb < kAmxKStep) {  // the last rows or the last k: a padded copy
      std::memset(a_pad, 0, sizeof a_pad);
      for (int i = 0; i < mr; ++i)
        std::memcpy(a_pad + i * kAmxKStep, A + static_cast<size_t>(i) * lda + k0,
                    static_cast<size_t>(kb));
      as = a_pad;
      as_ld = kAmxKStep;
    }
    const int8_t* bs = panel + static_cast<size_t>(k0 / 4) * bstride;
    if (kb < kAmxKStep) {
      std::memset(b_pad, 0, sizeof b_pad);
      std::memcpy(b_pad, bs, static_cast<size_t>((kb + 3) / 4) * bstride);
      bs = b_pad;
    }
    _tile_loadd(4, as, as_ld);
    _tile_loadd(5, as + static_cast<size_t>(16) * as_ld, as_ld);
    _tile_loadd(6, bs, bstride);
    _tile_loadd(7, bs + 64, bstride);
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  const int cstride = kAmxNRP * 4;  // acc rows: 32 int32
  _tile_stored(0, acc, cstride);
  _tile_stored(1, acc + 16, cstride);
  _tile_stored(2, acc + 16 * kAmxNRP, cstride);
  _tile_stored(3, acc + 16 * kAmxNRP + 16, cstride);
}

struct AmxPanels : VnniPacking<kAmxNRP> {
  static constexpr int kMR = kAmxMR;
  // The next panel is left to the hardware prefetcher (PanelPrefetch measured on the x86 vector
  // kernels only).
  static void tile_rows(int mr, int32_t* acc, const uint8_t* A, int lda, const int8_t* panel, int K,
                        const PanelPrefetch&) {
    amx_tile_rows(mr, acc, A, lda, panel, K);
  }
};

}  // namespace

void qu8s8_gemm_32x32_amx(int M, int n0, int n1, int K, const uint8_t* A, int lda, const int8_t* W,
                          int ldw, const int8_t* w_packed, int8_t* panel_buf,
                          const Q8Epilogue& epi) {
  // The configuration is per thread; loaded per call (a few dozen cycles) and released after, so
  // no tile state outlives the call.
  static const TileConfig cfg;
  _tile_loadconfig(&cfg);
  panel_gemm<AmxPanels>(M, n0, n1, K, A, lda, W, ldw, w_packed, panel_buf, epi);
  _tile_release();
}

}  // namespace bertrt::cpu
#endif
