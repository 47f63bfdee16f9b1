#version 450
// A reduction of n floats to one value, fp32 (OP spec constant): 0 Σx² (sum_squares), 1 Σx (the
// loss sums), 2 min and max (min_max). PASS 0: each workgroup folds `chunk` elements (strided per
// thread, then a tree) into one partial; PASS 1: one workgroup folds the partials and writes the
// result — a double's two words (OP 0, 1) or the two floats (OP 2). Error of a sum:
// ≤ (chunk/G + log2 G + partials/G + log2 G)·u·Σ|term| (pairwise over the tree).
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"
#include "util.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int OP = 0;
layout(constant_id = 2) const int PASS = 0;
layout(std430, binding = 0) readonly buffer X { float x_[]; };
layout(std430, binding = 1) buffer Partial { float partial_[]; };
layout(std430, binding = 2) buffer Out { uint out_[]; };
layout(std430, binding = 3) buffer Out2 { uint out2_[]; };
layout(push_constant) uniform Push { ReducePush p; };

shared float lo_s[gl_WorkGroupSize.x];
shared float hi_s[gl_WorkGroupSize.x];

void main() {
  const uint t = gl_LocalInvocationID.x, G = gl_WorkGroupSize.x;
  const uint wg = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
  uint begin = 0, end = p.n;
  if (PASS == 0) {
    begin = wg * p.chunk;
    end = min(p.n, begin + p.chunk);
  }
  float lo = 1.0 / 0.0, hi = -1.0 / 0.0, sum = 0.0;
  for (uint i = begin + t; i < end; i += G) {
    if (OP == 2) {
      if (PASS == 0) {
        const float v = x_[p.x_offset + i];
        lo = min(lo, v), hi = max(hi, v);
      } else {
        lo = min(lo, partial_[p.partial_offset + 2 * i]);
        hi = max(hi, partial_[p.partial_offset + 2 * i + 1]);
      }
    } else {
      const float v = PASS == 0 ? x_[p.x_offset + i] : partial_[p.partial_offset + i];
      sum += OP == 0 && PASS == 0 ? v * v : v;
    }
  }
  lo_s[t] = OP == 2 ? lo : sum;
  hi_s[t] = hi;
  barrier();
  for (uint s = G / 2; s > 0; s >>= 1) {
    if (t < s) {
      if (OP == 2) {
        lo_s[t] = min(lo_s[t], lo_s[t + s]);
        hi_s[t] = max(hi_s[t], hi_s[t + s]);
      } else {
        lo_s[t] += lo_s[t + s];
      }
    }
    barrier();
  }
  if (t != 0) return;
  if (PASS == 0) {
    if (OP == 2) {
      partial_[p.partial_offset + 2 * wg] = lo_s[0];
      partial_[p.partial_offset + 2 * wg + 1] = hi_s[0];
    } else {
      partial_[p.partial_offset + wg] = lo_s[0];
    }
  } else if (OP == 2) {
    out_[p.out_offset] = floatBitsToUint(lo_s[0]);
    out2_[p.out2_offset] = floatBitsToUint(hi_s[0]);
  } else {
    const uvec2 d = double_bits(lo_s[0]);
    out_[p.out_offset] = d.x;
    out_[p.out_offset + 1] = d.y;
  }
}
