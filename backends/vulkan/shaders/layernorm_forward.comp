#version 450
// LayerNorm of one row per workgroup: mean, then the biased variance of (x − mean) (two passes,
// as the reference; no E[x²] − mean² cancellation), each a tree sum over the workgroup in shared
// memory; saves mean and rstd for the backward.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer Out { float out_[]; };
layout(std430, binding = 1) writeonly buffer Mean { float mean_[]; };
layout(std430, binding = 2) writeonly buffer Rstd { float rstd_[]; };
layout(std430, binding = 3) readonly buffer Inp { float inp_[]; };
layout(std430, binding = 4) readonly buffer Weight { float weight_[]; };
layout(std430, binding = 5) readonly buffer Bias { float bias_[]; };
layout(push_constant) uniform Push { LayerNormPush p; };

shared float partial[gl_WorkGroupSize.x];

float workgroup_sum(float v) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    barrier();
  }
  const float total = partial[0];
  barrier();
  return total;
}

void main() {
  const uint row = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
  if (row >= p.rows) return;  // whole workgroups: barriers stay uniform
  const uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  const uint base = p.inp_offset + row * p.C;
  float s = 0.0;
  for (uint c = t; c < p.C; c += n) s += inp_[base + c];
  const float mean = workgroup_sum(s) / float(p.C);
  float q = 0.0;
  for (uint c = t; c < p.C; c += n) {
    const float d = inp_[base + c] - mean;
    q += d * d;
  }
  const float rstd = inversesqrt(workgroup_sum(q) / float(p.C) + p.eps);
  for (uint c = t; c < p.C; c += n) {
    const float x = (inp_[base + c] - mean) * rstd;
    out_[p.out_offset + row * p.C + c] =
        x * weight_[p.weight_offset + c] + bias_[p.bias_offset + c];
  }
  if (t == 0) {
    mean_[p.mean_offset + row] = mean;
    rstd_[p.rstd_offset + row] = rstd;
  }
}
