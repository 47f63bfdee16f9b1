#version 450
// pool_tokens (BACKWARD 0) and pool_tokens_backward (1), one thread per (sequence b, column c):
// the loops over positions of the cpu backend's kernel, in the same float order, so each output
// and each gradient element is written by one thread (no atomics).
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int BACKWARD = 0;
layout(std430, binding = 0) buffer Out { float out_[]; };
layout(std430, binding = 1) readonly buffer Hidden { float hidden_[]; };
layout(std430, binding = 2) readonly buffer Mask { int mask_[]; };
layout(std430, binding = 3) readonly buffer Prompt { int prompt_[]; };
layout(std430, binding = 4) readonly buffer Dout { float dout_[]; };
layout(push_constant) uniform Push { PoolPush p; };

const uint kCls = 0, kMax = 1, kMean = 2, kMeanSqrtLen = 3, kWeightedMean = 4, kLastToken = 5;

uint B_;  // the sequence of this thread
float m(uint t) {
  return mask_[p.mask_offset + B_ * p.T + t] != 0 && int(t) >= prompt_[p.prompt_offset + B_]
             ? 1.0 : 0.0;
}
float w(uint t) { return p.mode == kWeightedMean ? m(t) * float(t + 1) : m(t); }

void main() {
  const uint i = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (i >= p.B * p.H) return;
  B_ = i / p.H;
  const uint c = i % p.H;
  const uint h0 = p.hidden_offset + B_ * p.T * p.H + c;  // hidden[b, t, c] = h0 + t·H
  if (p.mode == kCls) {
    if (BACKWARD == 0) out_[p.out_offset + B_ * p.ld + c] = hidden_[h0];
    else out_[h0 - p.hidden_offset + p.out_offset] += dout_[p.dout_offset + B_ * p.ld + c];
    return;
  }
  if (p.mode == kMax) {
    uint arg = 0;
    float best = m(0) != 0.0 ? hidden_[h0] : -1e9;
    for (uint t = 1; t < p.T; ++t) {
      const float x = m(t) != 0.0 ? hidden_[h0 + t * p.H] : -1e9;
      if (x > best) best = x, arg = t;
    }
    if (BACKWARD == 0) out_[p.out_offset + B_ * p.ld + c] = best;
    else if (m(arg) != 0.0)
      out_[p.out_offset + (B_ * p.T + arg) * p.H + c] += dout_[p.dout_offset + B_ * p.ld + c];
    return;
  }
  if (p.mode == kLastToken) {
    uint last = 0;
    for (uint t = p.T; t-- > 0;)
      if (m(t) != 0.0) {
        last = t;
        break;
      }
    if (BACKWARD == 0)
      out_[p.out_offset + B_ * p.ld + c] = hidden_[h0 + last * p.H] * m(last);
    else
      out_[p.out_offset + (B_ * p.T + last) * p.H + c] +=
          dout_[p.dout_offset + B_ * p.ld + c] * m(last);
    return;
  }
  // mean, mean_sqrt_len_tokens, weightedmean: Σ w·h / max(Σ w, 1e-9) (its root for sqrt_len).
  float total = 0.0;
  for (uint t = 0; t < p.T; ++t) total += w(t);
  total = max(total, 1e-9);
  const float div = p.mode == kMeanSqrtLen ? sqrt(total) : total;
  if (BACKWARD == 0) {
    float sum = 0.0;
    for (uint t = 0; t < p.T; ++t) sum += hidden_[h0 + t * p.H] * w(t);
    out_[p.out_offset + B_ * p.ld + c] = sum / div;
  } else {
    const float d = dout_[p.dout_offset + B_ * p.ld + c];
    for (uint t = 0; t < p.T; ++t)
      if (w(t) != 0.0) out_[p.out_offset + (B_ * p.T + t) * p.H + c] += d * w(t) / div;
  }
}
