#version 450
// dtable[ids[i], :] += dout[i, :] without atomics: one workgroup per position i. It scans the ids
// in chunks of G (a prefix sum compacts the matching positions, in order); a workgroup whose id
// occurred earlier leaves, the first one adds every matching row in index order — the
// reference's order, so the same bits, whatever the device. A row past the bound window (a
// table larger than the device binds at once) is reported to the host (status) and left alone.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer Dtable { float dtable_[]; };
layout(std430, binding = 1) readonly buffer Ids { int ids_[]; };
layout(std430, binding = 2) readonly buffer Dout { float dout_[]; };
layout(std430, binding = 3) buffer Status { uint status_[]; };
layout(push_constant) uniform Push { EmbeddingBackwardPush p; };

shared uint count_s[gl_WorkGroupSize.x];
shared uint match_s[gl_WorkGroupSize.x];

void main() {
  const uint i = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
  if (i >= p.n) return;
  const uint t = gl_LocalInvocationID.x, G = gl_WorkGroupSize.x;
  const int id = ids_[p.ids_offset + i];
  const uint row = p.dtable_offset + uint(id) * p.C;
  if (id < 0 || row + p.C > uint(dtable_.length())) {  // uniform: one id per workgroup
    if (t == 0u && atomicCompSwap(status_[0], 0u, BERTRT_VK_ERROR_WINDOW) == 0u) {
      status_[1] = i;
      status_[2] = uint(id);
      status_[3] = (uint(dtable_.length()) - p.dtable_offset) / p.C;
    }
    return;
  }
  for (uint j0 = 0; j0 < p.n; j0 += G) {
    const uint j = j0 + t;
    const uint hit = j < p.n && ids_[p.ids_offset + j] == id ? 1u : 0u;
    count_s[t] = hit;
    barrier();
    for (uint s = 1; s < G; s <<= 1) {  // inclusive prefix sum (Hillis–Steele)
      const uint v = t >= s ? count_s[t - s] : 0u;
      barrier();
      count_s[t] += v;
      barrier();
    }
    if (hit != 0u) match_s[count_s[t] - 1u] = j;
    barrier();
    const uint m = count_s[G - 1u];
    if (m > 0u && match_s[0] < i) return;  // uniform: an earlier position owns this row
    for (uint c = t; c < p.C; c += G) {
      float v = dtable_[row + c];
      for (uint k = 0; k < m; ++k) v += dout_[p.dout_offset + match_s[k] * p.C + c];
      dtable_[row + c] = v;
    }
    barrier();
  }
}
