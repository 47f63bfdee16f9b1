#version 450
// dbias[c] += Σ_r dout[r, c]: one thread per column, the rows in order (deterministic; no atomics).
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer Dbias { float dbias_[]; };
layout(std430, binding = 1) readonly buffer Dout { float dout_[]; };
layout(push_constant) uniform Push { BiasBackwardPush p; };

void main() {
  const uint c = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (c >= p.cols) return;
  float s = 0.0;
  for (uint r = 0; r < p.rows; ++r) s += dout_[p.dout_offset + r * p.cols + c];
  dbias_[p.dbias_offset + c] += s;
}
