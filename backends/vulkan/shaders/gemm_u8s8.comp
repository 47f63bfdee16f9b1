#version 450
// u8 × s8 GEMM, C[m, n] = Σ_k A[m, k] · B[n, k] exact in int32 (K ≤ kMaxQ8K), TILE × TILE
// threads per block of C with A and B slabs staged in shared memory as ints. OP 0 writes the
// int32 sums; OP 1 is the int8 Linear: out = float(acc − a_zp · w_sum[n]) · (a_scale ·
// w_scale[n]) + bias[n], `precise` (no fused multiply-add), the cpu backend's bits.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"
#include "util.glsl"

layout(constant_id = 0) const uint TILE = 16;
layout(constant_id = 1) const int OP = 0;
layout(local_size_x_id = 0, local_size_y_id = 0) in;
layout(std430, binding = 0) readonly buffer A { uint a_[]; };
layout(std430, binding = 1) readonly buffer B { uint b_[]; };
layout(std430, binding = 2) writeonly buffer C { uint c_[]; };
layout(std430, binding = 3) readonly buffer WScale { float w_scale_[]; };
layout(std430, binding = 4) readonly buffer WSum { int w_sum_[]; };
layout(std430, binding = 5) readonly buffer Bias { float bias_[]; };
layout(push_constant) uniform Push { Q8GemmPush p; };

shared int As[TILE][TILE];
shared int Bs[TILE][TILE];

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint j = gl_WorkGroupID.x * TILE + tx, i = gl_WorkGroupID.y * TILE + ty;
  const uint arow = gl_WorkGroupID.y * TILE + ty, brow = gl_WorkGroupID.x * TILE + ty;
  int acc = 0;
  for (uint k0 = 0; k0 < p.K; k0 += TILE) {
    const uint k = k0 + tx;
    As[ty][tx] = arow < p.M && k < p.K ? int(BYTE_U(a_, p.a_offset + arow * p.lda + k)) : 0;
    Bs[ty][tx] = brow < p.N && k < p.K ? BYTE_S(b_, p.b_offset + brow * p.ldb + k) : 0;
    barrier();
    for (uint kk = 0; kk < TILE; ++kk) acc += As[ty][kk] * Bs[tx][kk];
    barrier();
  }
  if (i >= p.M || j >= p.N) return;
  const uint ci = p.c_offset + i * p.ldc + j;
  if (OP == 0) {
    c_[ci] = uint(acc);
    return;
  }
  // Exact: |Σ (a − zp)·w| ≤ K·255·128 < 2³¹, so the int32 difference is the true one.
  acc -= p.a_zero_point * w_sum_[p.w_sum_offset + j];
  precise float s = p.a_scale * w_scale_[p.w_scale_offset + j];
  precise float v = float(acc) * s;
  if (p.has_bias != 0) v = v + bias_[p.bias_offset + j];
  c_[ci] = floatBitsToUint(v);
}
