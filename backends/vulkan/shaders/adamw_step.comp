#version 450
// One AdamW update per element, the cpu backend's float operations in its order (kernels.cpp
// adamw_kernel): torch.optim.AdamW with bias correction, or the original BERT optimizer without.
// `precise` keeps the compiler from contracting a·b + c into an FMA the host code does not do.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer Param { float param_[]; };
layout(std430, binding = 1) buffer M { float m_[]; };
layout(std430, binding = 2) buffer V { float v_[]; };
layout(std430, binding = 3) readonly buffer Grad { float grad_[]; };
layout(push_constant) uniform Push { AdamWPush p; };

void main() {
  const uint i = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
  const float g = grad_[p.grad_offset + i];
  precise float w = param_[p.param_offset + i];
  precise float m = m_[p.m_offset + i] * p.b1 + g * p.one_minus_b1;
  precise float v;
  if (p.bias_correction != 0) {
    v = v_[p.v_offset + i] * p.b2 + p.one_minus_b2 * g * g;  // torch: (1 − β2)·g·g
    w = w * p.decay;
    precise float denom = sqrt(v) / p.bc2_sqrt + p.eps;
    w = w - p.step_size * m / denom;
  } else {
    v = v_[p.v_offset + i] * p.b2 + p.one_minus_b2 * (g * g);  // TF: (1 − β2)·square(g)
    precise float u = m / (sqrt(v) + p.eps) + p.wd * w;
    w = w - p.lr * u;
  }
  m_[p.m_offset + i] = m;
  v_[p.v_offset + i] = v;
  param_[p.param_offset + i] = w;
}
