// The panel GEMM loop nest of the int8 kernels that read W in packed panels (q8_gemm_vnni.h: the
// VNNI files, q8_gemm_avx2.cpp, q8_gemm_neoni8mm.cpp). Included by exactly those files, each
// built with its own instruction-set flags: everything here has internal linkage, so each file's
// copy is its own and cannot stand in for another's (ODR).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/q8_gemm.h"

namespace bertrt::cpu {
namespace {

inline int imin(int a, int b) { return a < b ? a : b; }

// The bytes of A that one pass of the panels reads (W prepacked). Without the blocks every panel
// read all of A: at BERT-base B8 the FFN's down projection's A is 1,024 × 3,072 bytes, read from
// L3 once a panel; in 256 KB blocks it stays in L2 (bench_kernels' FFN down at M = 1,024, one
// thread: 315 → 343–353 G MAC/s on an Intel Xeon with a 2 MB L2).
constexpr size_t kABlockBytes = 256 * 1024;

inline int imax(int a, int b) { return a > b ? a : b; }

// Cache lines of the next panel that a tile fetches into L2 while it computes (W prepacked).
// Each of a model's weights is read once a forward, from memory: without this the first tile of
// every panel waited on it (BERT-base's Linears at M = 128, one thread: 43 ms with twelve layers'
// weights against 34 with one layer's, from L3). A tile issues one prefetch a step of k, inside
// its loop: the same lines issued in a burst between tiles stalled on the fill buffers.
struct PanelPrefetch {
  const int8_t* next = nullptr;
  int lines = 0;
};

// Lines [from, pf.lines): what a tile's loop over k had no steps left for (a block of one tile).
inline void prefetch_rest(const PanelPrefetch& pf, int from) {
  for (int l = from; l < pf.lines; ++l) __builtin_prefetch(pf.next + 64 * l, 0, 2);
}

// The loop nest of every panel kernel (the VNNI ones, qu8s8_gemm_6x16_avx2 and the NEON i8mm one):
// per block of A's rows (kABlockBytes, W prepacked), per panel of Kern::kNRP columns (packed once,
// or here into panel_buf, then read from L1/L2 for every row of the block), tiles of Kern::kMR
// rows, then the epilogue of q8_gemm.cpp's store() in the same order of operations (these files
// are built with -ffp-contract=off: no FMA, results identical to the scalar kernel's). acc − zp·Σw
// is computed in int32: exact for zp ∈ [0, 255] and K ≤ kMaxQ8K.
// A is what Kern::tile_rows reads (u8 as it is, or the AVX2 kernel's int16 copy), row stride lda;
// each tile also fetches its share of the next panel (PanelPrefetch).
template <class Kern>
void panel_gemm(int M, int n0, int n1, int K, const typename Kern::AType* A, int lda,
                const int8_t* W, int ldw, const int8_t* w_packed, int8_t* panel_buf,
                const Q8Epilogue& e) {
  constexpr int NRP = Kern::kNRP, MR = Kern::kMR;
  const size_t panel_bytes = Kern::panel_bytes(K);
  alignas(64) int32_t acc[MR * NRP];
  alignas(64) int32_t zw[NRP];
  alignas(64) float s[NRP], bias[NRP];
  int mb = M;
  if (w_packed) {
    const size_t row_bytes = static_cast<size_t>(lda) * sizeof(typename Kern::AType);
    mb = imax(MR, static_cast<int>(kABlockBytes / row_bytes) / MR * MR);
  }
  for (int m0 = 0; m0 < M; m0 += mb) {
    for (int n = n0; n < n1; n += NRP) {
      const int nr = imin(NRP, n1 - n);
      const int8_t* panel;
      if (w_packed) {
        panel = w_packed + static_cast<size_t>(n / NRP) * panel_bytes;
      } else {
        Kern::pack_panel(panel_buf, W, ldw, n, nr, K);
        panel = panel_buf;
      }
      if (e.out)
        for (int j = 0; j < nr; ++j) {
          zw[j] = static_cast<int32_t>(static_cast<uint32_t>(e.a_zero_point) *
                                       static_cast<uint32_t>(e.w_sum[n + j]));
          s[j] = e.a_scale * e.w_scale[n + j];
          bias[j] = e.bias ? e.bias[n + j] : 0.0f;
        }
      const int m_end = imin(M, m0 + mb);
      // The next panel's lines, shared out over this block's tiles.
      const int tiles = (m_end - m0 + MR - 1) / MR;
      const int lines = w_packed && n + NRP < n1 ? static_cast<int>(panel_bytes / 64) : 0;
      const int chunk = (lines + tiles - 1) / tiles;
      int fetched = 0;
      for (int m = m0; m < m_end; m += MR) {
        const int mr = imin(MR, M - m);
        PanelPrefetch pf;
        if (fetched < lines) {
          pf.next = panel + panel_bytes + 64 * static_cast<size_t>(fetched);
          pf.lines = imin(chunk, lines - fetched);
          fetched += pf.lines;
        }
        Kern::tile_rows(mr, acc, A + static_cast<size_t>(m) * lda, lda, panel, K, pf);
        for (int i = 0; i < mr; ++i) {
          const int32_t* r = acc + i * NRP;
          if (e.c) {
            int32_t* c = e.c + static_cast<size_t>(m + i) * e.ldc + n;
            for (int j = 0; j < nr; ++j) c[j] = r[j];
          }
          if (e.out) {
            float* o = e.out + static_cast<size_t>(m + i) * e.ldo + (n - e.out_col0);
            if (e.bias) {
              for (int j = 0; j < nr; ++j)
                o[j] = static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(r[j]) -
                                                               static_cast<uint32_t>(zw[j]))) *
                           s[j] +
                       bias[j];
            } else {
              for (int j = 0; j < nr; ++j)
                o[j] = static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(r[j]) -
                                                               static_cast<uint32_t>(zw[j]))) *
                       s[j];
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace bertrt::cpu
