#version 450
// Row moves, one thread per element of the n × C output (OP spec constant):
//   0 embedding_forward  out[i, :] += table[ids[i], :]
//   1 gather_rows        out[i, :]  = src[ids[i], :]
//   2 copy_2d            out[r·ldd + c] = src[r·lds + c]
// A table row past the bound window (a table larger than the device binds at once) is reported
// to the host (status) and left alone.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int OP = 0;
layout(std430, binding = 0) buffer Out { float out_[]; };
layout(std430, binding = 1) readonly buffer Src { float src_[]; };
layout(std430, binding = 2) readonly buffer Ids { int ids_[]; };
layout(std430, binding = 3) buffer Status { uint status_[]; };
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
  const int id = ids_[p.ids_offset + i];
  const uint row = p.src_offset + uint(id) * p.C;
  if (id < 0 || row + p.C > uint(src_.length())) {
    if (atomicCompSwap(status_[0], 0u, BERTRT_VK_ERROR_WINDOW) == 0u) {
      status_[1] = i;
      status_[2] = uint(id);
      status_[3] = (uint(src_.length()) - p.src_offset) / p.C;
    }
    return;
  }
  const float v = src_[row + c];
  if (OP == 0) out_[p.out_offset + k] += v;
  else out_[p.out_offset + k] = v;
}
