#version 450
// Tiled fp32 GEMM, all four transposes through the index arithmetic, batched over z: the
// forward, dX and dW GEMMs of every Linear and the attention matmuls. TILE × TILE threads each
// compute one element of a TILE × TILE block of C from TILE-wide slabs of A and B staged in
// shared memory; edge tiles are bounds-checked. Accumulation is fp32 in K order within a slab.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(constant_id = 0) const uint TILE = 16;  // chosen from the device's limits
layout(local_size_x_id = 0, local_size_y_id = 0) in;
layout(std430, binding = 0) readonly buffer A { float a_[]; };
layout(std430, binding = 1) readonly buffer B { float b_[]; };
layout(std430, binding = 2) buffer C { float c_[]; };
layout(push_constant) uniform Push { GemmPush p; };

shared float As[TILE][TILE];
shared float Bs[TILE][TILE];

float load_a(uint base, uint i, uint k) {  // op(A)[i, k]
  if (i >= p.M || k >= p.K) return 0.0;
  return p.trans_a != 0 ? a_[base + k * p.lda + i] : a_[base + i * p.lda + k];
}
float load_b(uint base, uint k, uint j) {  // op(B)[k, j]
  if (k >= p.K || j >= p.N) return 0.0;
  return p.trans_b != 0 ? b_[base + j * p.ldb + k] : b_[base + k * p.ldb + j];
}

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint j = gl_WorkGroupID.x * TILE + tx, i = gl_WorkGroupID.y * TILE + ty;
  const uint z = gl_WorkGroupID.z;
  const uint abase = p.a_offset + z * p.stride_a, bbase = p.b_offset + z * p.stride_b;
  float acc = 0.0;
  for (uint k0 = 0; k0 < p.K; k0 += TILE) {
    As[ty][tx] = load_a(abase, gl_WorkGroupID.y * TILE + ty, k0 + tx);
    Bs[ty][tx] = load_b(bbase, k0 + ty, gl_WorkGroupID.x * TILE + tx);
    barrier();
    for (uint k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    barrier();
  }
  if (i >= p.M || j >= p.N) return;
  const uint ci = p.c_offset + z * p.stride_c + i * p.ldc + j;
  // BLAS convention: beta == 0 means C is not read (it may hold garbage, NaN included).
  c_[ci] = p.beta == 0.0 ? p.alpha * acc : p.alpha * acc + p.beta * c_[ci];
}
