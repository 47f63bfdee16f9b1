#version 450
// out = gelu(inp). Exact GELU x·Φ(x) with Φ(x) = erfc(−x/√2)/2 and erfc from Numerical Recipes'
// erfcc (Chebyshev fit, fractional error < 1.2e-7 everywhere; GLSL has no erf); the tanh form
// 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))) of the original TF code.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer Out { float out_[]; };
layout(std430, binding = 1) readonly buffer Inp { float inp_[]; };
layout(push_constant) uniform Push { GeluPush p; };

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
  float y;
  if (p.kind == 0) {
    y = 0.5 * x * erfc_nr(-x * 0.70710678118654752);
  } else {
    const float u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
    y = 0.5 * x * (1.0 + tanh(u));
  }
  out_[p.out_offset + i] = y;
}
