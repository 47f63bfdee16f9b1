#version 450
// l2_normalize_rows (BACKWARD 0) and its backward (1), one row per workgroup: the squared norm
// (and for the backward x·dy) as tree sums in fp32 (the reference sums in double), then
//   y = x / max(‖x‖, 1e-12);   dx += (dy − y·(y·dy)) / ‖x‖, or dy / 1e-12 below the clamp.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int BACKWARD = 0;
layout(std430, binding = 0) buffer Out { float out_[]; };
layout(std430, binding = 1) readonly buffer X { float x_[]; };
layout(std430, binding = 2) readonly buffer Dy { float dy_[]; };
layout(push_constant) uniform Push { L2NormalizePush p; };

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
  const uint t = gl_LocalInvocationID.x, G = gl_WorkGroupSize.x;
  const uint x0 = p.x_offset + row * p.ldx, o0 = p.out_offset + row * p.ld_out,
             g0 = p.dy_offset + row * p.cols;
  float ss = 0.0;
  for (uint c = t; c < p.cols; c += G) ss += x_[x0 + c] * x_[x0 + c];
  const float norm = sqrt(workgroup_sum(ss));
  if (BACKWARD == 0) {
    const float n = max(norm, 1e-12);
    for (uint c = t; c < p.cols; c += G) out_[o0 + c] = x_[x0 + c] / n;
    return;
  }
  float xg = 0.0;
  for (uint c = t; c < p.cols; c += G) xg += x_[x0 + c] * dy_[g0 + c];
  xg = workgroup_sum(xg);
  if (norm <= 1e-12) {
    for (uint c = t; c < p.cols; c += G) out_[o0 + c] += dy_[g0 + c] / 1e-12;
    return;
  }
  const float yg = xg / norm;  // y·dy
  for (uint c = t; c < p.cols; c += G)
    out_[o0 + c] += (dy_[g0 + c] - x_[x0 + c] / norm * yg) / norm;
}
