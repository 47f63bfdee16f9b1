#version 450
// MSE pieces, one thread per prediction (fp32; the reference works in double): the squared
// difference to the scratch (summed afterwards by the reduction) and
// dpred = weight · 2 · (pred − target) / n.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Dpred { float dpred_[]; };
layout(std430, binding = 1) readonly buffer Pred { float pred_[]; };
layout(std430, binding = 2) readonly buffer Target { float target_[]; };
layout(std430, binding = 3) writeonly buffer Sq { float sq_[]; };
layout(push_constant) uniform Push { MsePush p; };

void main() {
  const uint i = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
  const float diff = pred_[p.pred_offset + i] - target_[p.target_offset + i];
  sq_[p.sq_offset + i] = diff * diff;
  if (p.has_dpred != 0) dpred_[p.dpred_offset + i] = p.weight * 2.0 * diff / float(p.n);
}
