#version 450
// OP 0: gelu_backward, dinp += gelu'(x)·dout — exact: Φ(x) + x·φ(x) (Φ through Numerical Recipes'
// erfc fit, as gelu_forward); tanh form: 0.5(1 + t) + 0.5x(1 − t²)·√(2/π)(1 + 3·0.044715x²).
// OP 1: tanh_forward, out = tanh(x). OP 2: tanh_backward, dinp += (1 − y²)·dout from the output y.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int OP = 0;
layout(std430, binding = 0) buffer Out { float out_[]; };
layout(std430, binding = 1) readonly buffer Inp { float inp_[]; };
layout(std430, binding = 2) readonly buffer Dout { float dout_[]; };
layout(push_constant) uniform Push { ActivationPush p; };

float erfc_nr(float x) {
  const float z = abs(x);
  const float t = 1.0 / (1.0 + 0.5 * z);
  const float r = t * exp(-z * z - 1.26551223 +
                          t * (1.00002368 +
                          t * (0.37409196 +
                          t * (0.09678418 +
                          t * (-0.18628806 +
                          t * (0.27886807 +
                          t * (-1.13520398 +
                          t * (1.48851587 +
                          t * (-0.82215223 +
                          t * 0.17087277)))))))));
  return x >= 0.0 ? r : 2.0 - r;
}

void main() {
  const uint i = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
  const float x = inp_[p.inp_offset + i];
  if (OP == 1) {
    out_[p.out_offset + i] = tanh(x);
    return;
  }
  float d;
  if (OP == 2) {
    d = 1.0 - x * x;
  } else if (p.kind == 0) {
    d = 0.5 * erfc_nr(-x * 0.70710678118654752) + x * 0.39894228040143268 * exp(-0.5 * x * x);
  } else {
    const float t = tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x));
    d = 0.5 * (1.0 + t) +
        0.5 * x * (1.0 - t * t) * 0.79788456080286535588 * (1.0 + 3.0 * 0.044715 * x * x);
  }
  out_[p.out_offset + i] += d * dout_[p.dout_offset + i];
}
