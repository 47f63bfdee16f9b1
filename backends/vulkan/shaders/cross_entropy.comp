#version 450
// Softmax cross-entropy, one workgroup per row of logits [rows, V] (fp32; the reference works in
// double): lse = max + log Σ exp(z − max) (tree sums), the row's loss lse − z[target] to the
// scratch row losses (0 for an ignored row, target < 0), and dlogits OVERWRITTEN with
// grad_scale · (softmax − onehot). A target ≥ V is reported to the host (status). In place
// (dlogits bound to the logits' memory) is safe: each element is read only by the invocation
// that writes it (j ≡ t mod G), the target's loss included.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Dlogits { float dlogits_[]; };
layout(std430, binding = 1) readonly buffer Logits { float logits_[]; };
layout(std430, binding = 2) readonly buffer Targets { int targets_[]; };
layout(std430, binding = 3) writeonly buffer Loss { float loss_[]; };
layout(std430, binding = 4) buffer Status { uint status_[]; };
layout(push_constant) uniform Push { CrossEntropyPush p; };

shared float partial[gl_WorkGroupSize.x];

void main() {
  const uint row = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
  if (row >= p.rows) return;
  const uint t = gl_LocalInvocationID.x, G = gl_WorkGroupSize.x;
  const uint z0 = p.logits_offset + row * p.V, d0 = p.dlogits_offset + row * p.V;
  const int target = targets_[p.targets_offset + row];
  if (target >= int(p.V)) {
    if (t == 0 && atomicCompSwap(status_[0], 0u, BERTRT_VK_ERROR_TARGET) == 0u) {
      status_[1] = row;
      status_[2] = uint(target);
      status_[3] = p.V;
    }
    return;
  }
  if (target < 0) {  // ignored (Hugging Face's -100)
    if (p.has_dlogits != 0)
      for (uint j = t; j < p.V; j += G) dlogits_[d0 + j] = 0.0;
    if (t == 0) loss_[p.loss_offset + row] = 0.0;
    return;
  }
  float mx = -1.0 / 0.0;
  for (uint j = t; j < p.V; j += G) mx = max(mx, logits_[z0 + j]);
  partial[t] = mx;
  barrier();
  for (uint s = G / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] = max(partial[t], partial[t + s]);
    barrier();
  }
  mx = partial[0];
  barrier();
  float sum = 0.0;
  for (uint j = t; j < p.V; j += G) sum += exp(logits_[z0 + j] - mx);
  partial[t] = sum;
  barrier();
  for (uint s = G / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    barrier();
  }
  const float lse = mx + log(partial[0]);
  if (t == uint(target) % G) loss_[p.loss_offset + row] = lse - logits_[z0 + uint(target)];
  if (p.has_dlogits != 0)
    for (uint j = t; j < p.V; j += G)
      dlogits_[d0 + j] =
          p.grad_scale * (exp(logits_[z0 + j] - lse) - (j == uint(target) ? 1.0 : 0.0));
}
