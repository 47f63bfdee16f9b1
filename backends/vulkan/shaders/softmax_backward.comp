#version 450
// dscores += scale · p ⊙ (dp − Σ_j p ⊙ dp), one workgroup per row (tree sum of the dot product).
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer Dscores { float dscores_[]; };
layout(std430, binding = 1) readonly buffer Probs { float probs_[]; };
layout(std430, binding = 2) readonly buffer Dprobs { float dprobs_[]; };
layout(push_constant) uniform Push { SoftmaxBackwardPush p; };

shared float partial[gl_WorkGroupSize.x];

void main() {
  const uint row = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
  if (row >= p.rows) return;
  const uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x, base = row * p.T;
  float dot = 0.0;
  for (uint j = t; j < p.T; j += n)
    dot += probs_[p.probs_offset + base + j] * dprobs_[p.dprobs_offset + base + j];
  partial[t] = dot;
  barrier();
  for (uint s = n / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    barrier();
  }
  dot = partial[0];
  for (uint j = t; j < p.T; j += n) {
    const float pj = probs_[p.probs_offset + base + j];
    dscores_[p.dscores_offset + base + j] +=
        p.scale * pj * (dprobs_[p.dprobs_offset + base + j] - dot);
  }
}
