#version 450
// Tiled fp32 GEMM, all four transposes through the index arithmetic, batched over z: the
// forward, dX and dW GEMMs of every Linear and the attention matmuls. TILE × TILE threads compute
// a (TILE·R) × (TILE·R) block of C, each thread an R × R register block (rows ty + r·TILE, columns
// tx + c·TILE), from TILE-deep slabs of A and B staged in shared memory; edge tiles are
// bounds-checked. Per slab: 2 barriers for TILE·R² multiply-adds a thread (R² times fewer than one
// output a thread). Accumulation is fp32 in K order.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(constant_id = 0) const uint TILE = 16;  // chosen from the device's limits
const uint R = 4;
layout(local_size_x_id = 0, local_size_y_id = 0) in;
layout(std430, binding = 0) readonly buffer A { float a_[]; };
layout(std430, binding = 1) readonly buffer B { float b_[]; };
layout(std430, binding = 2) buffer C { float c_[]; };
layout(push_constant) uniform Push { GemmPush p; };

shared float As[TILE][TILE * R];  // [k][i]
shared float Bs[TILE][TILE * R];  // [k][j]

float load_a(uint base, uint i, uint k) {  // op(A)[i, k]
  if (i >= p.M || k >= p.K) return 0.0;
  return p.trans_a != 0 ? a_[base + k * p.lda + i] : a_[base + i * p.lda + k];
}
float load_b(uint base, uint k, uint j) {  // op(B)[k, j]
  if (k >= p.K || j >= p.N) return 0.0;
  return p.trans_b != 0 ? b_[base + j * p.ldb + k] : b_[base + k * p.ldb + j];
}

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, t = ty * TILE + tx;
  const uint BM = TILE * R;
  const uint i0 = gl_WorkGroupID.y * BM, j0 = gl_WorkGroupID.x * BM, z = gl_WorkGroupID.z;
  const uint abase = p.a_offset + z * p.stride_a, bbase = p.b_offset + z * p.stride_b;
  float acc[R][R];
  for (uint r = 0; r < R; ++r)
    for (uint c = 0; c < R; ++c) acc[r][c] = 0.0;
  for (uint k0 = 0; k0 < p.K; k0 += TILE) {
    // TILE × BM elements of each slab, R per thread; consecutive threads walk the operand's
    // contiguous dimension (coalesced reads on GPUs).
    for (uint l = 0; l < R; ++l) {
      const uint idx = t + l * TILE * TILE;
      const uint ka = p.trans_a != 0 ? idx / BM : idx % TILE, ia = p.trans_a != 0 ? idx % BM : idx / TILE;
      As[ka][ia] = load_a(abase, i0 + ia, k0 + ka);
      const uint kb = p.trans_b != 0 ? idx % TILE : idx / BM, jb = p.trans_b != 0 ? idx / TILE : idx % BM;
      Bs[kb][jb] = load_b(bbase, k0 + kb, j0 + jb);
    }
    barrier();
    for (uint k = 0; k < TILE; ++k) {
      float av[R], bv[R];
      for (uint r = 0; r < R; ++r) av[r] = As[k][ty + r * TILE], bv[r] = Bs[k][tx + r * TILE];
      for (uint r = 0; r < R; ++r)
        for (uint c = 0; c < R; ++c) acc[r][c] += av[r] * bv[c];
    }
    barrier();
  }
  for (uint r = 0; r < R; ++r)
    for (uint c = 0; c < R; ++c) {
      const uint i = i0 + ty + r * TILE, j = j0 + tx + c * TILE;
      if (i >= p.M || j >= p.N) continue;
      const uint ci = p.c_offset + z * p.stride_c + i * p.ldc + j;
      // BLAS convention: beta == 0 means C is not read (it may hold garbage, NaN included).
      c_[ci] = p.beta == 0.0 ? p.alpha * acc[r][c] : p.alpha * acc[r][c] + p.beta * c_[ci];
    }
}
