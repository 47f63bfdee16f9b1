// The loop nest of f32_gemm.h's SIMD kernels, one template for the ISA files
// (f32_gemm_avx512f.cpp, f32_gemm_fma3.cpp). Included by exactly those files, which define their
// Isa struct (vector type V, kLanes floats, kNR columns per tile, zero, load, bcast, fma, store,
// a kLanes × kLanes transpose) in an anonymous namespace: everything here has internal linkage, so
// each file's copy is built with its own -m flags and cannot stand in for another's.
#pragma once

#include <cstddef>
#include <cstring>

#include "backends/cpu/simd.h"

namespace bertrt::cpu {
namespace {

inline int fmin_i(int a, int b) { return a < b ? a : b; }

// P[p][k][PR] = X[p·PR + i, k] (0 for rows past M), panels [p0, p1). k outer, rows inner: the PR
// rows' cache lines each serve 16 values of k from L1, and P is written in order.
template <int PR>
void pack_x(float* P, const float* X, int ldx, int M, int K, int p0, int p1) {
  for (int p = p0; p < p1; ++p) {
    float* dst = P + static_cast<size_t>(p) * K * PR;
    const int m0 = p * PR, mr = fmin_i(PR, M - m0);
    const float* x = X + static_cast<size_t>(m0) * ldx;
    for (int k = 0; k < K; ++k, dst += PR) {
      for (int i = 0; i < mr; ++i) dst[i] = x[static_cast<size_t>(i) * ldx + k];
      for (int i = mr; i < PR; ++i) dst[i] = 0.0f;
    }
  }
}

// pack_x with the ISA's kLanes × kLanes transposes (Isa::transpose) for whole panels and whole
// blocks of kLanes k, pack_x's loops for the rest: the same floats in the same places, two
// transposes per kLanes k instead of PR strided scalar loads per k (the scalar loops were 6.5 % of
// a BERT-base B1 forward on avx512f).
template <class Isa>
void pack_x_transposed(float* P, const float* X, int ldx, int M, int K, int p0, int p1) {
  constexpr int L = Isa::kLanes, PR = 2 * L;
  const int kl = K / L * L;
  for (int p = p0; p < p1; ++p) {
    if ((p + 1) * PR > M || kl == 0) {
      pack_x<PR>(P, X, ldx, M, K, p, p + 1);
      continue;
    }
    float* dst = P + static_cast<size_t>(p) * K * PR;
    const float* x = X + static_cast<size_t>(p) * PR * ldx;
    for (int k = 0; k < kl; k += L) {
      Isa::transpose(dst + static_cast<size_t>(k) * PR, PR, x + k, ldx);
      Isa::transpose(dst + static_cast<size_t>(k) * PR + L, PR, x + static_cast<size_t>(L) * ldx + k,
                     ldx);
    }
    for (int k = kl; k < K; ++k)
      for (int i = 0; i < PR; ++i)
        dst[static_cast<size_t>(k) * PR + i] = x[static_cast<size_t>(i) * ldx + k];
  }
}

// One tile over k in [0, kc): acc[i, j] += Σ_k P[k][i]·W[j, k] for i < PR = 2·kLanes, j < NR,
// each a chain of fused multiply-adds over k in order (f32_gemm.h's numerics). The chain starts
// from +0 (first) or from the partial sums the previous block of k left in S[j][PR]; it ends in S
// (not last) or in Y[i, j] (+ bias[j]) for i < mr (last).
// W is read in place (W[j·ldw + k], ldw > 0) or from a packed block of the tile (W[k·kNR + j],
// ldw == 0; pack_w). next: the packed block the following tile call reads, or null (below).
template <class Isa, int NR>
void tile(float* S, bool first, bool last, float* Y, int ldy, const float* P, const float* W,
          int ldw, int kc, int mr, const float* bias, const float* next = nullptr) {
  using V = typename Isa::V;
  constexpr int L = Isa::kLanes, PR = 2 * L;
  V a0[NR], a1[NR];
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j) {
    a0[j] = first ? Isa::zero() : Isa::load(S + j * PR);
    a1[j] = first ? Isa::zero() : Isa::load(S + j * PR + L);
  }
  if (ldw == 0) {
    // One cache line of the next tile's block a step, into L2 (prefetcht1), until all of it.
    const int fetch = next ? (kc * Isa::kNR + 15) / 16 : 0;
    for (int k = 0; k < kc; ++k, P += PR, W += Isa::kNR) {
      if (k < fetch) __builtin_prefetch(next + 16 * k, 0, 2);
      const V x0 = Isa::load(P), x1 = Isa::load(P + L);
#pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) {
        const V w = Isa::bcast(W[j]);
        a0[j] = Isa::fma(x0, w, a0[j]);
        a1[j] = Isa::fma(x1, w, a1[j]);
      }
    }
  } else {
    for (int k = 0; k < kc; ++k, P += PR) {
      const V x0 = Isa::load(P), x1 = Isa::load(P + L);
#pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) {
        const V w = Isa::bcast(W[static_cast<size_t>(j) * ldw + k]);
        a0[j] = Isa::fma(x0, w, a0[j]);
        a1[j] = Isa::fma(x1, w, a1[j]);
      }
    }
  }
  constexpr int TR = NR <= L ? L : NR;  // rows of t: kLanes for the transposes below
  alignas(64) float t[TR][PR];
  float* out = last ? &t[0][0] : S;
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j) Isa::store(out + j * PR, a0[j]), Isa::store(out + j * PR + L, a1[j]);
  if (!last) return;
  // The accumulators hold columns of Y. Rows of Y come out of kLanes × kLanes transposes (rows
  // of t past NR are padding), then one contiguous add of the bias per row: the scalar copy this
  // replaces was ~9 % of the tile's samples at K = 256 (BERT-mini B8). The scalar Isa (kLanes 1,
  // a reference for the attention kernel) keeps the plain copy.
  alignas(64) float u[PR][TR];
  if constexpr (NR <= L && L > 1) {
#pragma GCC unroll 16
    for (int j = NR; j < L; ++j) {
      Isa::store(&t[j][0], Isa::zero());
      Isa::store(&t[j][L], Isa::zero());
    }
    Isa::transpose(&u[0][0], L, &t[0][0], PR);
    if (mr > L) Isa::transpose(&u[L][0], L, &t[0][L], PR);
  } else {
    for (int i = 0; i < mr; ++i)
      for (int j = 0; j < NR; ++j) u[i][j] = t[j][i];
  }
  // GCC leaves the bias add scalar at NR 12 (extracting lanes), so it goes 4 floats at a time.
  constexpr int N4 = NR / 4 * 4;
  for (int i = 0; i < mr; ++i) {
    float* y = Y + static_cast<size_t>(i) * ldy;
    for (int j = 0; j < N4; j += 4) {
      f32x4 v, b = {};
      std::memcpy(&v, &u[i][j], sizeof v);
      if (bias) std::memcpy(&b, bias + j, sizeof b);
      v = bias ? v + b : v;
      std::memcpy(y + j, &v, sizeof v);
    }
    for (int j = N4; j < NR; ++j) y[j] = bias ? u[i][j] + bias[j] : u[i][j];
  }
}

template <class Isa, int NR>
void tile_cols(int nr, float* S, bool first, bool last, float* Y, int ldy, const float* P,
               const float* W, int ldw, int kc, int mr, const float* bias,
               const float* next = nullptr) {
  if constexpr (NR > 1) {
    if (nr < NR) return tile_cols<Isa, NR - 1>(nr, S, first, last, Y, ldy, P, W, ldw, kc, mr, bias);
  }
  tile<Isa, NR>(S, first, last, Y, ldy, P, W, ldw, kc, mr, bias, next);
}

// Blocks of k: a panel's block (kKC · PR floats, 32 KB for zmm) stays in L1 while the tiles of
// W's rows pass it; a block of columns keeps its W rows' block (≤ kWBlockBytes) in L2 for the
// next panel.
constexpr int kKC = 256;
constexpr size_t kWBlockBytes = 1024 * 1024;
// From this many panels on, each block of W is packed (pack_w) before the panels pass it: NR rows
// read in place are NR strided streams, and where the row stride is a multiple of 4 KB (K = 1024,
// 3072) they all fall in one L1 set. Packing costs a pass over W per call, which few panels do
// not repay (bench_fc: in place wins at M = 128, packed at M = 1024).
constexpr int kPackWPanels = 8;

template <class Isa>
constexpr int block_cols() {
  constexpr int nc = static_cast<int>(kWBlockBytes / (sizeof(float) * kKC)) / Isa::kNR * Isa::kNR;
  static_assert(nc >= Isa::kNR);
  return nc;
}

template <class Isa>
bool packs_w(int M) {
  return (M + 2 * Isa::kLanes - 1) / (2 * Isa::kLanes) >= kPackWPanels;
}

// Floats of gemm_xwt's scratch S for M rows and columns [n0, n1): the partial sums of one block
// of columns for every panel when K > kKC (several blocks of k), then the packed block of W when
// packs_w(M).
template <class Isa>
size_t scratch_floats(int M, int n0, int n1, int K) {
  constexpr int PR = 2 * Isa::kLanes, NR = Isa::kNR;
  const int cols = fmin_i(block_cols<Isa>(), (n1 - n0 + NR - 1) / NR * NR);
  const size_t sums = K > kKC ? static_cast<size_t>((M + PR - 1) / PR) * cols * PR : 0;
  const size_t wp = packs_w<Isa>(M) ? static_cast<size_t>(cols) * fmin_i(K, kKC) : 0;
  return sums + wp;
}

// Columns [n, ne) × k [kb, kb + kc) of W as tiles of [kc][kNR] (columns past ne zero).
template <class Isa>
void pack_w(float* Wp, const float* W, int ldw, int n, int ne, int kb, int kc) {
  constexpr int NR = Isa::kNR;
  for (; n < ne; n += NR, Wp += static_cast<size_t>(kc) * NR) {
    const int nr = fmin_i(NR, ne - n);
    for (int j = 0; j < NR; ++j) {
      const float* w = W + static_cast<size_t>(n + j) * ldw + kb;
      for (int k = 0; k < kc; ++k) Wp[k * NR + j] = j < nr ? w[k] : 0.0f;
    }
  }
}

// All of W packed once (f32_pack_w): tiles of kNR columns over all of K, each [K][kNR], columns
// past N zero. Tile n / kNR's block of k from kb starts at Wp + n·K + kb·kNR, so every split of
// the columns in multiples of kNR reads it as pack_w's per-call blocks are read.
template <class Isa>
size_t packed_w_floats(int N, int K) {
  constexpr size_t NR = Isa::kNR;
  return (static_cast<size_t>(N) + NR - 1) / NR * NR * static_cast<size_t>(K);
}

// Columns [n0, n1) for all M rows; S holds scratch_floats floats (64-byte aligned). ldw == 0:
// W is packed once (packed_w_floats) and read as it is.
template <class Isa>
void gemm_xwt(int M, int n0, int n1, int K, const float* P, const float* W, int ldw,
              const float* bias, float* Y, int ldy, float* S) {
  constexpr int PR = 2 * Isa::kLanes, NR = Isa::kNR;
  const int panels = (M + PR - 1) / PR;
  const size_t panel_floats = static_cast<size_t>(K) * PR;
  constexpr int nc = block_cols<Isa>();
  const int cols = fmin_i(nc, (n1 - n0 + NR - 1) / NR * NR);
  const bool prepacked = ldw == 0;
  float* sums = K > kKC ? S : nullptr;
  float* wp = !prepacked && packs_w<Isa>(M)
                  ? S + (sums ? static_cast<size_t>(panels) * cols * PR : 0)
                  : nullptr;
  for (int nb = n0; nb < n1; nb += nc) {
    const int ne = fmin_i(n1, nb + nc);
    const size_t s_panel = static_cast<size_t>((ne - nb + NR - 1) / NR) * NR * PR;
    for (int kb = 0; kb < K; kb += kKC) {
      const int kc = fmin_i(kKC, K - kb);
      const bool first = kb == 0, last = kb + kc == K;
      if (wp) pack_w<Isa>(wp, W, ldw, nb, ne, kb, kc);
      for (int p = 0; p < panels; ++p) {
        const float* pk = P + p * panel_floats + static_cast<size_t>(kb) * PR;
        float* s = sums ? sums + p * s_panel : nullptr;
        float* y = Y + static_cast<size_t>(p) * PR * ldy;
        const int mr = fmin_i(PR, M - p * PR);
        for (int n = nb; n < ne; n += NR) {
          const float* w = prepacked ? W + static_cast<size_t>(n) * K + static_cast<size_t>(kb) * NR
                           : wp      ? wp + static_cast<size_t>(n - nb) * kc
                                     : W + static_cast<size_t>(n) * ldw + kb;
          // W packed once lays each tile's blocks over all of K, so the next tile's block is
          // K·kNR floats on: a jump the hardware prefetcher does not take, and at the first
          // panel every tile waited on memory for its block (BERT-base B1, 1 thread: the forward
          // −16 % with the next block fetched during this tile; docs/explanation/cpu-kernels.md).
          // The blocks packed per call lie in order (wp) and need no help.
          const float* next = prepacked && n + NR < ne
                                  ? W + static_cast<size_t>(n + NR) * K + static_cast<size_t>(kb) * NR
                                  : nullptr;
          tile_cols<Isa, NR>(fmin_i(NR, ne - n), s ? s + (n - nb) * PR : nullptr, first, last,
                             y + n, ldy, pk, w, prepacked || wp ? 0 : ldw, kc, mr,
                             bias ? bias + n : nullptr, next);
        }
      }
    }
  }
}

// --- The broadcast form (f32_gemm_xwt_bcast): X read in place, W packed once ------------------
// The tile holds MR rows × kBR = 2·kLanes columns of Y in 2·MR accumulators. Each step of k loads
// the two vectors of W's packed tile ([K][kBR], columns past N zero) and broadcasts X[i, k] of
// its MR rows: no packing of X per call and no transposes on the way out (each accumulator is a
// piece of one row of Y). Same chains as gemm_xwt: acc = fma(X[i, k], W[j, k], acc) over k in
// order from +0, the partial sums of a block of k left in Y itself, then acc + bias[j].

template <class Isa>
constexpr int bcast_cols() {
  return 2 * Isa::kLanes;
}

template <class Isa>
size_t packed_wb_floats(int N, int K) {
  constexpr size_t NR = bcast_cols<Isa>();
  return (static_cast<size_t>(N) + NR - 1) / NR * NR * static_cast<size_t>(K);
}

// Tiles [t0, t1) of W [N, K] (row stride K): tile t at Wp + t·kBR·K, [K][kBR].
template <class Isa>
void pack_wb(float* Wp, const float* W, int N, int K, int t0, int t1) {
  constexpr int NR = bcast_cols<Isa>();
  for (int t = t0; t < t1; ++t) {
    float* dst = Wp + static_cast<size_t>(t) * NR * K;
    for (int j = 0; j < NR; ++j) {
      const int n = t * NR + j;
      for (int k = 0; k < K; ++k)
        dst[static_cast<size_t>(k) * NR + j] = n < N ? W[static_cast<size_t>(n) * K + k] : 0.0f;
    }
  }
}

// Rows [0, MR) × kBR columns of Y over k in [0, kc): from +0 (first) or the partial sums in Y,
// + bias (last, when non-null). X points at the tile's first row and block of k. next: the
// block the following tile reads, fetched into L2 meanwhile (see gemm_xwt), or null.
template <class Isa, int MR>
void bcast_tile(bool first, bool last, float* Y, int ldy, const float* X, int ldx, const float* W,
                int kc, const float* bias, const float* next) {
  using V = typename Isa::V;
  constexpr int L = Isa::kLanes, NR = 2 * L;
  V a0[MR], a1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    a0[i] = first ? Isa::zero() : Isa::loadu(Y + static_cast<size_t>(i) * ldy);
    a1[i] = first ? Isa::zero() : Isa::loadu(Y + static_cast<size_t>(i) * ldy + L);
  }
  const int fetch = next ? (kc * NR + 31) / 32 : 0;  // steps of two cache lines
  for (int k = 0; k < kc; ++k, W += NR) {
    if (k < fetch) {
      __builtin_prefetch(next + 32 * k, 0, 2);
      __builtin_prefetch(next + 32 * k + 16, 0, 2);
    }
    const V w0 = Isa::loadu(W), w1 = Isa::loadu(W + L);  // Wp: any alignment
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V x = Isa::bcast(X[static_cast<size_t>(i) * ldx + k]);
      a0[i] = Isa::fma(x, w0, a0[i]);
      a1[i] = Isa::fma(x, w1, a1[i]);
    }
  }
  if (last && bias) {
    const V b0 = Isa::loadu(bias), b1 = Isa::loadu(bias + L);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) a0[i] = Isa::add(a0[i], b0), a1[i] = Isa::add(a1[i], b1);
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    Isa::storeu(Y + static_cast<size_t>(i) * ldy, a0[i]);
    Isa::storeu(Y + static_cast<size_t>(i) * ldy + L, a1[i]);
  }
}

// mr ≤ MR rows and nr ≤ kBR columns: a full tile in place, or (nr < kBR) through a local tile
// whose columns past nr are padding, so that nothing past column nr of Y is read or written.
template <class Isa, int MR>
void bcast_tile_edge(int mr, int nr, bool first, bool last, float* Y, int ldy, const float* X,
                     int ldx, const float* W, int kc, const float* bias, const float* next) {
  if constexpr (MR > 1) {
    if (mr < MR)
      return bcast_tile_edge<Isa, MR - 1>(mr, nr, first, last, Y, ldy, X, ldx, W, kc, bias, next);
  }
  constexpr int NR = bcast_cols<Isa>();
  if (nr == NR) return bcast_tile<Isa, MR>(first, last, Y, ldy, X, ldx, W, kc, bias, next);
  alignas(64) float t[MR][NR] = {};
  alignas(64) float b[NR] = {};
  for (int i = 0; i < MR && !first; ++i)
    std::memcpy(t[i], Y + static_cast<size_t>(i) * ldy, sizeof(float) * nr);
  if (bias) std::memcpy(b, bias, sizeof(float) * nr);
  bcast_tile<Isa, MR>(first, last, &t[0][0], NR, X, ldx, W, kc, bias ? b : nullptr, next);
  for (int i = 0; i < MR; ++i)
    std::memcpy(Y + static_cast<size_t>(i) * ldy, t[i], sizeof(float) * nr);
}

// Rows [0, M) × columns [n0, n1) (n0 a multiple of kBR) of Y = X·Wᵀ (+ bias), Wp from pack_wb.
// Blocks of columns keep their block of W (≤ kWBlockBytes) in L2 while the rows pass it.
template <class Isa, int MR>
void gemm_xwt_bcast(int M, int n0, int n1, int K, const float* X, int ldx, const float* Wp,
                    const float* bias, float* Y, int ldy) {
  constexpr int NR = bcast_cols<Isa>();
  constexpr int nc = static_cast<int>(kWBlockBytes / (sizeof(float) * kKC)) / NR * NR;
  static_assert(nc >= NR);
  for (int nb = n0; nb < n1; nb += nc) {
    const int ne = fmin_i(n1, nb + nc);
    for (int kb = 0; kb < K; kb += kKC) {
      const int kc = fmin_i(kKC, K - kb);
      const bool first = kb == 0, last = kb + kc == K;
      for (int m = 0; m < M; m += MR) {
        const float* x = X + static_cast<size_t>(m) * ldx + kb;
        float* y = Y + static_cast<size_t>(m) * ldy;
        for (int n = nb; n < ne; n += NR) {
          const float* w = Wp + static_cast<size_t>(n) * K + static_cast<size_t>(kb) * NR;
          // Only the first rows meet W's block in memory; later rows find it in L2.
          const float* next = m == 0 && n + NR < ne ? w + static_cast<size_t>(NR) * K : nullptr;
          bcast_tile_edge<Isa, MR>(fmin_i(MR, M - m), fmin_i(NR, ne - n), first, last, y + n, ldy,
                                   x, ldx, w, kc, bias ? bias + n : nullptr, next);
        }
      }
    }
  }
}

}  // namespace
}  // namespace bertrt::cpu
