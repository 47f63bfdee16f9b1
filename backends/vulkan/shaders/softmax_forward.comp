#version 450
// Attention softmax, one workgroup per row of [B, NH, T, T]: v_j = scale·s_j + mask[b, j], the
// row max subtracted before exp (12 × −200 gives 1/12, not NaN), a row dropped entirely by −inf
// masks gives uniform probabilities (as the reference).
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Probs { float probs_[]; };
layout(std430, binding = 1) readonly buffer Scores { float scores_[]; };
layout(std430, binding = 2) readonly buffer Mask { float mask_[]; };
layout(push_constant) uniform Push { SoftmaxPush p; };

shared float partial[gl_WorkGroupSize.x];

float value(uint base, uint b, uint j) {
  const float m = p.has_mask != 0 ? mask_[p.mask_offset + b * p.T + j] : 0.0;
  return p.scale * scores_[p.scores_offset + base + j] + m;
}

void main() {
  const uint row = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
  if (row >= p.B * p.NH * p.T) return;
  const uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  const uint b = row / (p.NH * p.T), base = row * p.T;
  float mx = -1.0 / 0.0;
  for (uint j = t; j < p.T; j += n) mx = max(mx, value(base, b, j));
  partial[t] = mx;
  barrier();
  for (uint s = n / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] = max(partial[t], partial[t + s]);
    barrier();
  }
  mx = partial[0];
  barrier();
  if (isinf(mx) && mx < 0.0) {
    for (uint j = t; j < p.T; j += n) probs_[p.probs_offset + base + j] = 1.0 / float(p.T);
    return;
  }
  float sum = 0.0;
  for (uint j = t; j < p.T; j += n) sum += exp(value(base, b, j) - mx);
  partial[t] = sum;
  barrier();
  for (uint s = n / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    barrier();
  }
  sum = partial[0];
  for (uint j = t; j < p.T; j += n)
    probs_[p.probs_offset + base + j] = exp(value(base, b, j) - mx) / sum;
}
