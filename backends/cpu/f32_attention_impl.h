// The loop nest of f32_attention.h's kernels, one template for the scalar reference
// (f32_attention.cpp) and the ISA files (f32_gemm_avx512f.cpp, f32_gemm_fma3.cpp). Isa adds to
// f32_gemm_impl.h's operations: add, sub, mul, div, max (a > b ? a : b, as maxps), round (to
// nearest even), pow2 (2^n of an integral n in [−126, 0]), select_lt (a < b ? x : y) and
// transpose (dst[c·ldd + r] = src[r·lds + c] for r, c < kLanes: an L × L block, in registers).
// Internal linkage only, as f32_gemm_impl.h, and no library inline code.
#pragma once

#include <cstddef>

#include "backends/cpu/f32_attention.h"
#include "backends/cpu/f32_gemm_impl.h"

namespace bertrt::cpu {
namespace {

// e^z for z ≤ 0 (f32_math.h's exp_nonpos_f32, each step an explicit operation): n = round(z/ln2),
// r = z − n·ln2 in two exact-ish steps, e^r by a degree-7 polynomial, times 2^n. z < −87.3 gives 0
// (−inf too); NaN gives a tiny positive number instead of NaN (no kernel sees one from finite Q, K).
template <class Isa>
typename Isa::V exp_nonpos(typename Isa::V z) {
  using V = typename Isa::V;
  const V lo = Isa::bcast(-87.3f);
  const V zc = Isa::max(z, lo);
  const V fn = Isa::round(Isa::mul(zc, Isa::bcast(1.44269504088896341f)));
  V r = Isa::fma(fn, Isa::bcast(-0.693359375f), zc);  // exact: n has ≤ 7 bits, ln2_hi 9
  r = Isa::fma(fn, Isa::bcast(2.12194440e-4f), r);
  const V r2 = Isa::mul(r, r);
  V p = Isa::bcast(1.9875691500e-4f);
  p = Isa::fma(p, r, Isa::bcast(1.3981999507e-3f));
  p = Isa::fma(p, r, Isa::bcast(8.3334519073e-3f));
  p = Isa::fma(p, r, Isa::bcast(4.1665795894e-2f));
  p = Isa::fma(p, r, Isa::bcast(1.6666665459e-1f));
  p = Isa::fma(p, r, Isa::bcast(5.0000001201e-1f));
  p = Isa::add(Isa::fma(p, r2, r), Isa::bcast(1.0f));
  return Isa::select_lt(z, lo, Isa::zero(), Isa::mul(p, Isa::pow2(fn)));
}

// O[d][PR] = O[d]·α + Σ_j P[j]·V[j, d] for ND head dims, j < nk in order.
template <class Isa, int ND>
void pv_tile(float* O, const float* P, const float* V_, int ld, int nk, typename Isa::V alpha0,
             typename Isa::V alpha1) {
  using V = typename Isa::V;
  constexpr int L = Isa::kLanes, PR = 2 * L;
  V a0[ND], a1[ND];
#pragma GCC unroll 16
  for (int d = 0; d < ND; ++d) {
    a0[d] = Isa::mul(Isa::load(O + d * PR), alpha0);
    a1[d] = Isa::mul(Isa::load(O + d * PR + L), alpha1);
  }
  for (int j = 0; j < nk; ++j, P += PR) {
    const V p0 = Isa::load(P), p1 = Isa::load(P + L);
    const float* v = V_ + static_cast<size_t>(j) * ld;
#pragma GCC unroll 16
    for (int d = 0; d < ND; ++d) {
      const V w = Isa::bcast(v[d]);
      a0[d] = Isa::fma(p0, w, a0[d]);
      a1[d] = Isa::fma(p1, w, a1[d]);
    }
  }
#pragma GCC unroll 16
  for (int d = 0; d < ND; ++d) Isa::store(O + d * PR, a0[d]), Isa::store(O + d * PR + L, a1[d]);
}

// Fewer than NR head dims at the end: the same code at the width that is left.
template <class Isa, int NR>
void pv_tile_n(int n, float* O, const float* P, const float* V_, int ld, int nk,
               typename Isa::V alpha0, typename Isa::V alpha1) {
  if constexpr (NR > 1) {
    if (n < NR) return pv_tile_n<Isa, NR - 1>(n, O, P, V_, ld, nk, alpha0, alpha1);
  }
  pv_tile<Isa, NR>(O, P, V_, ld, nk, alpha0, alpha1);
}

// f32_attention.h's loop for rows [r0, r1), a panel of PR rows at a time. scratch: Qp [HS][PR],
// O [HS][PR], S [kF32AttentionBlock][PR], l [PR] (f32_attention_scratch_floats).
template <class Isa>
void attention_rows(float* ctx, int ldc, const float* q, const float* K, const float* V_, int ld,
                    const float* mask, int T, int HS, float scale, int r0, int r1, float* scratch) {
  using V = typename Isa::V;
  constexpr int L = Isa::kLanes, PR = 2 * L, NR = Isa::kNR;
  float* Qp = scratch;
  float* O = Qp + static_cast<size_t>(HS) * PR;
  float* S = O + static_cast<size_t>(HS) * PR;
  float* l_out = S + static_cast<size_t>(kF32AttentionBlock) * PR;
  for (int i0 = r0; i0 < r1; i0 += PR) {
    const int mr = fmin_i(PR, r1 - i0);
    // Q's panel as [HS][PR] (and the output back as rows, below): a full panel by L × L
    // register transposes, others by pack_x's scalar copy. Against T keys only, a scalar
    // transpose of a 32-row panel cost a quarter of the attention's time at T = 128 (perf).
    const bool blocks = mr == PR && HS % L == 0;
    if (blocks) {
      for (int rb = 0; rb < PR; rb += L)
        for (int d = 0; d < HS; d += L)
          Isa::transpose(Qp + d * PR + rb, PR, q + static_cast<size_t>(i0 + rb) * ld + d, ld);
    } else {
      pack_x<PR>(Qp, q + static_cast<size_t>(i0) * ld, ld, mr, HS, 0, 1);
    }
    for (int d = 0; d < HS * PR; d += L) Isa::store(O + d, Isa::zero());
    V m0 = Isa::bcast(-3.40282347e38f), m1 = m0;  // −FLT_MAX
    V l0 = Isa::zero(), l1 = l0;
    for (int j0 = 0; j0 < T; j0 += kF32AttentionBlock) {
      const int nk = fmin_i(kF32AttentionBlock, T - j0);
      // Scores: f32_gemm_impl.h's tile with Q's panel as X and the keys' rows as W, its sums
      // left in S [j][PR]; then z = fma(s, scale, mask) and the block's max in one pass.
      for (int j = 0; j < nk; j += NR)
        tile_cols<Isa, NR>(fmin_i(NR, nk - j), S + j * PR, /*first=*/true, /*last=*/false,
                           /*Y, unused when not last:*/ S, 0, Qp,
                           K + static_cast<size_t>(j0 + j) * ld, ld, HS, PR, nullptr);
      const V sc = Isa::bcast(scale);
      V b0 = m0, b1 = m1;
      for (int j = 0; j < nk; ++j) {
        V z0 = Isa::load(S + j * PR), z1 = Isa::load(S + j * PR + L);
        if (mask) {
          const V mk = Isa::bcast(mask[j0 + j]);
          z0 = Isa::fma(z0, sc, mk), z1 = Isa::fma(z1, sc, mk);
        } else {
          z0 = Isa::mul(z0, sc), z1 = Isa::mul(z1, sc);
        }
        Isa::store(S + j * PR, z0);
        Isa::store(S + j * PR + L, z1);
        b0 = Isa::max(z0, b0);
        b1 = Isa::max(z1, b1);
      }
      const V alpha0 = exp_nonpos<Isa>(Isa::sub(m0, b0)), alpha1 = exp_nonpos<Isa>(Isa::sub(m1, b1));
      l0 = Isa::mul(l0, alpha0);
      l1 = Isa::mul(l1, alpha1);
      for (int j = 0; j < nk; ++j) {
        const V p0 = exp_nonpos<Isa>(Isa::sub(Isa::load(S + j * PR), b0));
        const V p1 = exp_nonpos<Isa>(Isa::sub(Isa::load(S + j * PR + L), b1));
        Isa::store(S + j * PR, p0);
        Isa::store(S + j * PR + L, p1);
        l0 = Isa::add(l0, p0);
        l1 = Isa::add(l1, p1);
      }
      const float* v = V_ + static_cast<size_t>(j0) * ld;
      for (int d = 0; d < HS; d += NR)
        pv_tile_n<Isa, NR>(fmin_i(NR, HS - d), O + d * PR, S, v + d, ld, nk, alpha0, alpha1);
      m0 = b0;
      m1 = b1;
    }
    for (int d = 0; d < HS; ++d) {
      Isa::store(O + d * PR, Isa::div(Isa::load(O + d * PR), l0));
      Isa::store(O + d * PR + L, Isa::div(Isa::load(O + d * PR + L), l1));
    }
    Isa::store(l_out, l0);
    Isa::store(l_out + L, l1);
    if (blocks) {
      for (int rb = 0; rb < PR; rb += L)
        for (int d = 0; d < HS; d += L)
          Isa::transpose(ctx + static_cast<size_t>(i0 + rb) * ldc + d, ldc, O + d * PR + rb, PR);
    }
    for (int i = 0; i < mr; ++i) {
      float* c = ctx + static_cast<size_t>(i0 + i) * ldc;
      if (l_out[i] == 0.0f) {  // every key −inf: the uniform average of V
        const float u = 1.0f / static_cast<float>(T);
        for (int d = 0; d < HS; ++d) {
          V acc = Isa::zero();  // lane 0 carries the chain; V's type keeps Isa's fma
          for (int j = 0; j < T; ++j)
            acc = Isa::fma(Isa::bcast(u), Isa::bcast(V_[static_cast<size_t>(j) * ld + d]), acc);
          Isa::store(S, acc);
          c[d] = S[0];
        }
        continue;
      }
      if (!blocks)
        for (int d = 0; d < HS; ++d) c[d] = O[d * PR + i];
    }
  }
}

}  // namespace
}  // namespace bertrt::cpu
