#version 450
// LayerNorm backward (llm.c layernorm_backward), deterministic: PASS 0 (one workgroup per row)
// the input gradient, PASS 1 (one thread per column) the parameter gradients. See
// push_constants.h LayerNormBackwardPush.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int PASS = 0;
layout(std430, binding = 0) buffer Dinp { float dinp_[]; };
layout(std430, binding = 1) buffer Dweight { float dweight_[]; };
layout(std430, binding = 2) buffer Dbias { float dbias_[]; };
layout(std430, binding = 3) readonly buffer Dout { float dout_[]; };
layout(std430, binding = 4) readonly buffer Inp { float inp_[]; };
layout(std430, binding = 5) readonly buffer Weight { float weight_[]; };
layout(std430, binding = 6) readonly buffer Mean { float mean_[]; };
layout(std430, binding = 7) readonly buffer Rstd { float rstd_[]; };
layout(push_constant) uniform Push { LayerNormBackwardPush p; };

shared float part_a[gl_WorkGroupSize.x];
shared float part_b[gl_WorkGroupSize.x];

void main() {
  const uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  if (PASS == 1) {
    const uint c = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * n + t;
    if (c >= p.C) return;
    float dw = 0.0, db = 0.0;
    for (uint r = 0; r < p.rows; ++r) {
      const float d = dout_[p.dout_offset + r * p.C + c];
      const float xn = (inp_[p.inp_offset + r * p.C + c] - mean_[p.mean_offset + r]) *
                       rstd_[p.rstd_offset + r];
      dw += xn * d;
      db += d;
    }
    dweight_[p.dweight_offset + c] += dw;
    dbias_[p.dbias_offset + c] += db;
    return;
  }
  const uint row = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
  if (row >= p.rows) return;
  const uint base = row * p.C;
  const float mu = mean_[p.mean_offset + row], rs = rstd_[p.rstd_offset + row];
  float a = 0.0, b = 0.0;
  for (uint c = t; c < p.C; c += n) {
    const float xn = (inp_[p.inp_offset + base + c] - mu) * rs;
    const float dn = weight_[p.weight_offset + c] * dout_[p.dout_offset + base + c];
    a += dn;
    b += dn * xn;
  }
  part_a[t] = a;
  part_b[t] = b;
  barrier();
  for (uint s = n / 2; s > 0; s >>= 1) {
    if (t < s) {
      part_a[t] += part_a[t + s];
      part_b[t] += part_b[t + s];
    }
    barrier();
  }
  const float dn_mean = part_a[0] / float(p.C), dn_n_mean = part_b[0] / float(p.C);
  for (uint c = t; c < p.C; c += n) {
    const float xn = (inp_[p.inp_offset + base + c] - mu) * rs;
    const float dn = weight_[p.weight_offset + c] * dout_[p.dout_offset + base + c];
    dinp_[p.dinp_offset + base + c] += rs * (dn - dn_mean - xn * dn_n_mean);
  }
}
