#version 450
// One workgroup per row of x [rows, cols] (OP spec constant): 0 argmax_rows (the first column of
// the largest value, as std::max_element), 1 absmax_rows, 2 symmetric_scale_rows
// (max(absmax / half_range, FLT_EPSILON), the division correctly rounded as on the host).
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"
#include "util.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int OP = 0;
layout(std430, binding = 0) writeonly buffer Out { uint out_[]; };
layout(std430, binding = 1) readonly buffer X { float x_[]; };
layout(push_constant) uniform Push { RowReducePush p; };

shared float v_s[gl_WorkGroupSize.x];
shared uint i_s[gl_WorkGroupSize.x];

void main() {
  const uint row = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
  if (row >= p.rows) return;
  const uint t = gl_LocalInvocationID.x, G = gl_WorkGroupSize.x, base = p.x_offset + row * p.cols;
  float best = OP == 0 ? -1.0 / 0.0 : 0.0;
  uint at = 0xffffffffu;
  for (uint c = t; c < p.cols; c += G) {
    const float v = OP == 0 ? x_[base + c] : abs(x_[base + c]);
    if (at == 0xffffffffu || v > best) best = v, at = c;  // ascending c: the first maximum
  }
  v_s[t] = best;
  i_s[t] = at;
  barrier();
  for (uint s = G / 2; s > 0; s >>= 1) {
    if (t < s) {
      const float vb = v_s[t + s];
      const uint ib = i_s[t + s];
      if (ib != 0xffffffffu &&
          (i_s[t] == 0xffffffffu || vb > v_s[t] || (vb == v_s[t] && ib < i_s[t])))
        v_s[t] = vb, i_s[t] = ib;
    }
    barrier();
  }
  if (t != 0) return;
  if (OP == 0) out_[p.out_offset + row] = i_s[0] == 0xffffffffu ? 0u : i_s[0];  // cols = 0
  else if (OP == 1) out_[p.out_offset + row] = floatBitsToUint(v_s[0]);
  else
    out_[p.out_offset + row] =
        floatBitsToUint(max(div_rn(v_s[0], p.half_range), uintBitsToFloat(0x34000000u)));
}
