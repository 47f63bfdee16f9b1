#version 450
// CoSENTLoss in one workgroup (n is a batch of pairs): the largest z_ij = scale·(cos_i − cos_j)
// over pairs with labels_i < labels_j (and 0), Σ exp(z_ij − max) as a tree sum, the loss
// max + log(exp(−max) + Σ) as a float into scratch (the host's reduction makes it the double),
// and dcos_k = grad_scale·scale·(Σ_j p_kj − Σ_j p_jk) / total, one thread per k (fp32; the
// reference works in double).
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Dcos { float dcos_[]; };
layout(std430, binding = 1) readonly buffer Cos { float cos_[]; };
layout(std430, binding = 2) readonly buffer Labels { float labels_[]; };
layout(std430, binding = 3) writeonly buffer Loss { float loss_[]; };
layout(push_constant) uniform Push { CosentPush p; };

shared float partial[gl_WorkGroupSize.x];

float c_(uint i) { return cos_[p.cos_offset + i]; }
float l_(uint i) { return labels_[p.labels_offset + i]; }

void main() {
  const uint t = gl_LocalInvocationID.x, G = gl_WorkGroupSize.x;
  float mx = 0.0;
  for (uint i = t; i < p.n; i += G)
    for (uint j = 0; j < p.n; ++j)
      if (l_(i) < l_(j)) mx = max(mx, p.scale * (c_(i) - c_(j)));
  partial[t] = mx;
  barrier();
  for (uint s = G / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] = max(partial[t], partial[t + s]);
    barrier();
  }
  mx = partial[0];
  barrier();
  float sum = 0.0;
  for (uint i = t; i < p.n; i += G)
    for (uint j = 0; j < p.n; ++j)
      if (l_(i) < l_(j)) sum += exp(p.scale * (c_(i) - c_(j)) - mx);
  partial[t] = sum;
  barrier();
  for (uint s = G / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    barrier();
  }
  const float total = exp(-mx) + partial[0];
  if (t == 0) loss_[p.loss_offset] = mx + log(total);
  if (p.has_dcos == 0) return;
  for (uint k = t; k < p.n; k += G) {
    float g = 0.0;
    for (uint j = 0; j < p.n; ++j) {
      if (l_(k) < l_(j)) g += exp(p.scale * (c_(k) - c_(j)) - mx);
      if (l_(j) < l_(k)) g -= exp(p.scale * (c_(j) - c_(k)) - mx);
    }
    dcos_[p.dcos_offset + k] = p.grad_scale * p.scale * g / total;
  }
}
