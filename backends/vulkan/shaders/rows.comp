#version 450
// Row moves, one thread per element of the n × C output (OP spec constant):
//   0 embedding_forward  out[i, :] += table[ids[i], :]
//   1 gather_rows        out[i, :]  = src[ids[i], :]
//   2 copy_2d            out[r·ldd + c] = src[r·lds + c]
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int OP = 0;
layout(std430, binding = 0) buffer Out { float out_[]; };
layout(std430, binding = 1) readonly buffer Src { float src_[]; };
layout(std430, binding = 2) readonly buffer Ids { int ids_[]; };
layout(push_constant) uniform Push { RowsPush p; };

void main() {
  const uint k = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (k >= p.n * p.C) return;
  const uint i = k / p.C, c = k % p.C;
  if (OP == 2) {
    out_[p.out_offset + i * p.ldd + c] = src_[p.src_offset + i * p.lds + c];
    return;
  }
  const float v = src_[p.src_offset + uint(ids_[p.ids_offset + i]) * p.C + c];
  if (OP == 0) out_[p.out_offset + k] += v;
  else out_[p.out_offset + k] = v;
}
