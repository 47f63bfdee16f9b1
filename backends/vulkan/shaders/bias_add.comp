#version 450
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer Out { float out_[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias_[]; };
layout(push_constant) uniform Push { BiasAddPush p; };

void main() {
  const uint i = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (i >= p.rows * p.cols) return;
  out_[p.out_offset + i] += bias_[p.bias_offset + i % p.cols];
}
