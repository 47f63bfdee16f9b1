#version 450
// fill / scale / add, chosen by the specialization constant OP (one source, three pipelines).
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int OP = 0;  // 0 fill, 1 scale, 2 add
layout(std430, binding = 0) buffer Out { float out_[]; };
layout(std430, binding = 1) readonly buffer A { float a_[]; };
layout(std430, binding = 2) readonly buffer B { float b_[]; };
layout(push_constant) uniform Push { ElementwisePush p; };

void main() {
  const uint i = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
  if (OP == 0) out_[p.out_offset + i] = p.value;
  else if (OP == 1) out_[p.out_offset + i] = out_[p.out_offset + i] * p.value;
  else out_[p.out_offset + i] = a_[p.a_offset + i] + b_[p.b_offset + i];
}
