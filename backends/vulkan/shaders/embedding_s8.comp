#version 450
// The int8 embedding lookup, one thread per element of out [n, C]:
// out[i, c] += scale[ids[i]] · float(q[ids[i], c]), q int8 [V, C]; an id outside [0, V) is
// reported to the host (status) and its row left alone.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"
#include "util.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer Out { float out_[]; };
layout(std430, binding = 1) readonly buffer Ids { int ids_[]; };
layout(std430, binding = 2) readonly buffer Q { uint q_[]; };
layout(std430, binding = 3) readonly buffer Scale { float scale_[]; };
layout(std430, binding = 4) buffer Status { uint status_[]; };
layout(push_constant) uniform Push { EmbeddingS8Push p; };

void main() {
  const uint k = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (k >= p.n * p.C) return;
  const uint i = k / p.C, c = k % p.C;
  const int id = ids_[p.ids_offset + i];
  if (id < 0 || id >= int(p.V)) {
    if (atomicCompSwap(status_[0], 0u, BERTRT_VK_ERROR_ID) == 0u) {
      status_[1] = i;
      status_[2] = uint(id);
      status_[3] = p.V;
    }
    return;
  }
  const float q = float(BYTE_S(q_, p.q_offset + uint(id) * p.C + c));
  precise float v = out_[p.out_offset + k] + scale_[p.scale_offset + uint(id)] * q;
  out_[p.out_offset + k] = v;
}
