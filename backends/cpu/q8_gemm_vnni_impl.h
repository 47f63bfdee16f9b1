// The VNNI tiles and packing, one template for the ISA files (q8_gemm_vnni.h: the three VNNI
// files and the AMX one). Included by exactly those files, which define their kernel structs (for
// VNNI: vector type V, kLanes int32 lanes, kMR rows a tile, zero, load, bcast, dot, store) in an
// anonymous namespace: everything here has internal linkage, so each file's copy is built with its
// own -m flags and cannot stand in for another's.
#pragma once

#include <cstring>

#include "backends/cpu/q8_gemm_vnni.h"
#include "backends/cpu/q8_panel_gemm.h"

namespace bertrt::cpu {
namespace {

// c += the 4-byte dot products of a (u8) and b (s8), as inline assembly: with the intrinsics GCC 12
// copies every accumulator once per iteration (vmovdqa between two registers per vpdpbusd) and
// spills some; tied to one register ("+v") it keeps each in place.
#define BERTRT_VPDPBUSD(insn, c, a, b)                                              \
  ([](auto acc, auto x, auto y) {                                                   \
    __asm__(insn " %[y], %[x], %[acc]" : [acc] "+v"(acc) : [x] "v"(x), [y] "v"(y)); \
    return acc;                                                                     \
  }(c, a, b))

// acc [MR][2·kLanes] = Σ_k A[i, k]·panel[k][j], the K tail (K % 4 values) read byte by byte so
// no load passes the end of a row (the panel is zero there). The 16 accumulators are named
// variables: GCC keeps an array of vectors in memory (copies and spills every iteration).
template <class Isa, int MR>
inline void vnni_tile(int32_t* acc, const uint8_t* A, int lda, const int8_t* panel, int K,
                      const PanelPrefetch& pf) {
  using V = typename Isa::V;
  constexpr int L = Isa::kLanes;
  constexpr int NRP = 2 * L;
  V c00 = Isa::zero(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
    c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  const uint8_t* a0 = A;
  const uint8_t* a1 = a0 + (MR > 1 ? lda : 0);
  const uint8_t* a2 = a1 + (MR > 2 ? lda : 0);
  const uint8_t* a3 = a2 + (MR > 3 ? lda : 0);
  const uint8_t* a4 = a3 + (MR > 4 ? lda : 0);
  const uint8_t* a5 = a4 + (MR > 5 ? lda : 0);
  const uint8_t* a6 = a5 + (MR > 6 ? lda : 0);
  const uint8_t* a7 = a6 + (MR > 7 ? lda : 0);
  const int k4 = K / 4, rem = K - 4 * k4;
  const int8_t* b = panel;
#define BERTRT_VNNI_ROW(i, LOAD)         \
  if constexpr (MR > i) {                \
    const V av = Isa::bcast(LOAD(a##i)); \
    c##i##0 = Isa::dot(c##i##0, av, b0); \
    c##i##1 = Isa::dot(c##i##1, av, b1); \
  }
#define BERTRT_VNNI_ROWS(LOAD) \
  BERTRT_VNNI_ROW(0, LOAD)     \
  BERTRT_VNNI_ROW(1, LOAD)     \
  BERTRT_VNNI_ROW(2, LOAD)     \
  BERTRT_VNNI_ROW(3, LOAD)     \
  BERTRT_VNNI_ROW(4, LOAD)     \
  BERTRT_VNNI_ROW(5, LOAD)     \
  BERTRT_VNNI_ROW(6, LOAD)     \
  BERTRT_VNNI_ROW(7, LOAD)
  int q = 0;
  auto quad = [&q](const uint8_t* p) {
    int32_t x;
    std::memcpy(&x, p + 4 * q, 4);
    return x;
  };
  for (; q < k4; ++q, b += NRP * 4) {
    if (q < pf.lines) __builtin_prefetch(pf.next + 64 * q, 0, 2);
    const V b0 = Isa::load(b), b1 = Isa::load(b + L * 4);
    BERTRT_VNNI_ROWS(quad)
  }
  if (rem) {
    auto part = [k4, rem](const uint8_t* p) {
      int32_t x = 0;
      std::memcpy(&x, p + 4 * k4, static_cast<size_t>(rem));
      return x;
    };
    const V b0 = Isa::load(b), b1 = Isa::load(b + L * 4);
    BERTRT_VNNI_ROWS(part)
  }
#undef BERTRT_VNNI_ROWS
#undef BERTRT_VNNI_ROW
  prefetch_rest(pf, k4);
  Isa::store(acc, c00), Isa::store(acc + L, c01);
  if constexpr (MR > 1) Isa::store(acc + 1 * NRP, c10), Isa::store(acc + 1 * NRP + L, c11);
  if constexpr (MR > 2) Isa::store(acc + 2 * NRP, c20), Isa::store(acc + 2 * NRP + L, c21);
  if constexpr (MR > 3) Isa::store(acc + 3 * NRP, c30), Isa::store(acc + 3 * NRP + L, c31);
  if constexpr (MR > 4) Isa::store(acc + 4 * NRP, c40), Isa::store(acc + 4 * NRP + L, c41);
  if constexpr (MR > 5) Isa::store(acc + 5 * NRP, c50), Isa::store(acc + 5 * NRP + L, c51);
  if constexpr (MR > 6) Isa::store(acc + 6 * NRP, c60), Isa::store(acc + 6 * NRP + L, c61);
  if constexpr (MR > 7) Isa::store(acc + 7 * NRP, c70), Isa::store(acc + 7 * NRP + L, c71);
}

// Rows [0, mr) of a tile, mr ≤ MR: the tile instantiated at the rows that are left (only up to
// the kernel's own kMR, so a 6-row kernel builds no 7- or 8-row tile).
template <class Isa, int MR = Isa::kMR>
inline void vnni_tile_rows(int mr, int32_t* acc, const uint8_t* A, int lda, const int8_t* panel,
                           int K, const PanelPrefetch& pf) {
  static_assert(MR >= 1 && MR <= 8, "vnni_tile names 8 rows of accumulators");
  if constexpr (MR > 1) {
    if (mr < MR) return vnni_tile_rows<Isa, MR - 1>(mr, acc, A, lda, panel, K, pf);
  }
  vnni_tile<Isa, MR>(acc, A, lda, panel, K, pf);
}

// The VNNI packing of W in panels of NRP columns and A read as it is, as panel_gemm (below) sees
// them: shared by the VNNI kernels and the AMX one.
template <int NRP>
struct VnniPacking {
  using AType = uint8_t;  // A as it is
  static constexpr int kNRP = NRP;
  static size_t panel_bytes(int K) { return vnni_panel_bytes(kNRP, K); }
  static void pack_panel(int8_t* dst, const int8_t* W, int ldw, int n, int nr, int K) {
    vnni_pack_panel(dst, W, ldw, n, nr, K, kNRP);
  }
};

// The VNNI kernels as panel_gemm sees them.
template <class Isa>
struct VnniPanels : VnniPacking<2 * Isa::kLanes> {
  static constexpr int kMR = Isa::kMR;  // rows of A per tile (≤ 8): 2·kMR accumulators
  static void tile_rows(int mr, int32_t* acc, const uint8_t* A, int lda, const int8_t* panel, int K,
                        const PanelPrefetch& pf) {
    vnni_tile_rows<Isa>(mr, acc, A, lda, panel, K, pf);
  }
};

template <class Isa>
void vnni_gemm(int M, int n0, int n1, int K, const uint8_t* A, int lda, const int8_t* W, int ldw,
               const int8_t* w_packed, int8_t* panel_buf, const Q8Epilogue& e) {
  panel_gemm<VnniPanels<Isa>>(M, n0, n1, K, A, lda, W, ldw, w_packed, panel_buf, e);
}

}  // namespace
}  // namespace bertrt::cpu
