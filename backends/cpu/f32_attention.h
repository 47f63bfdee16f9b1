// Streamed attention for inference (no gradient): ctx = softmax(scale·Q·Kᵀ + mask)·V for one head,
// keys taken in blocks with a running max and sum (the "online softmax" of Milakov & Gimelshein
// 2018, as FlashAttention uses it), so no T × T score or probability buffer exists: per thread a
// panel of Q, one block of scores and the panel's output, ~24 KB for BERT's head size 64.
//
// The kernels share the f32_gemm.h kernels' instruction sets and panel shapes: a panel of PR query
// rows sits in the vector lanes, so each row's softmax is lane-wise and rows never mix.
//   avx512f  32 rows (2 zmm) per panel, 12 keys or head dims per tile
//   fma3     16 rows (2 ymm), 6 per tile
//   scalar   the reference: 2 rows, 4 per tile, std::fma for every fused multiply-add
//
// Numerics: every kernel computes, for each query row i, exactly this (one rounding per operation;
// fma rounds once), so all kernels give the same floats bit for bit (tests/unit/attention_test.cpp):
//   m = −FLT_MAX, l = 0, o[d] = 0
//   for each block of kF32AttentionBlock keys [j0, j1):
//     s_j = fma chain over d in order from +0 of Q[i,d]·K[j,d]
//     z_j = fma(s_j, scale, mask[j])   (s_j·scale without a mask)
//     m' = max(m, z_j over the block)
//     α = e^(m − m'),  l = l·α,  o[d] = o[d]·α
//     for j in order: p_j = e^(z_j − m'),  l = l + p_j,  o[d] = fma(p_j, V[j,d], o[d])
//     m = m'
//   ctx[i,d] = o[d] / l
// e^x (x ≤ 0) is f32_math.h's exp_nonpos_f32 written with explicit fmas (kernels agree whatever
// the compiler contracts), within 2 ulp; −inf gives 0, so a key masked by −inf adds nothing.
// A row whose keys are all −inf ends with l = 0 and gets the uniform average of V instead
// (ctx[i,d] = fma chain over j of (1/T)·V[j,d]), as ReferenceBackend's softmax does.
// Against the two-pass softmax (ReferenceBackend) the result differs by rounding only: each p_j is
// within a few ulp of the exactly rescaled value, and ctx is a convex combination of V's rows.
#pragma once

#include <cstddef>

#include "backends/cpu/f32_gemm.h"

namespace bertrt::cpu {

// Keys per block: part of the numerics above (where the running max is taken), so one constant
// for every kernel.
constexpr int kF32AttentionBlock = 64;

// BERTRT_ATTENTION: "streamed" (these kernels; the default) or "gemm" (the T × T path through
// OpenBLAS, for comparison); anything else is an error naming the variable. True for streamed.
bool f32_attention_streamed_from_env();

// Query rows per panel of kernel k (32, 16, 2): callers split rows in multiples of it.
int f32_attention_panel_rows(F32Kernel k);
// Floats of scratch f32_attention_rows needs for head size HS (64-byte aligned by the caller).
size_t f32_attention_scratch_floats(F32Kernel k, int HS);

// Rows [r0, r1) of one head: ctx[i·ldc + d] for d < HS from Q, K, V rows of row stride ld (head
// columns already offset), mask [T] additive (0 keep, −10000 or −inf drop) or nullptr.
void f32_attention_rows(F32Kernel k, float* ctx, int ldc, const float* q, const float* key,
                        const float* v, int ld, const float* mask, int T, int HS, float scale,
                        int r0, int r1, float* scratch);

}  // namespace bertrt::cpu
