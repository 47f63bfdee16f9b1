#version 450
// The quantization rules of the cpu backend, bit for bit (OP spec constant):
//   0 fake_quant_per_tensor, 1 fake_quant_per_row (zero point 0, scale[r]),
//   2 quantize_u8, 3 fake_quant_backward (dinp[i] += dout[i] where mask[i]),
//   4 fake_quant_observed (the scale and zero point of the range in `scale_`, computed here),
//   5 observe_min_max (one thread: the observer's moving average, out_ = the range).
// q = zero_point + roundEven(x · inv), inv = 1/scale correctly rounded; the float operations are
// `precise` (no fused multiply-add), so every device rounds as PyTorch does. OP 0–2 write a byte
// array (mask, q): each thread owns one 32-bit word of it and the elements behind its bytes.
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"
#include "util.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int OP = 0;
layout(std430, binding = 0) buffer Out { float out_[]; };
layout(std430, binding = 1) buffer Bytes { uint bytes_[]; };
layout(std430, binding = 2) readonly buffer X { float x_[]; };
layout(std430, binding = 3) readonly buffer Scale { float scale_[]; };
layout(std430, binding = 4) buffer Status { uint status_[]; };
layout(push_constant) uniform Push { FakeQuantPush p; };

bool bad_scale(float s) { return !(s > 0.0) || isinf(s) || isnan(s); }

// affine_qparams_rule (backends/quant_rules.h) in float32, the divisions correctly rounded.
void affine_qparams(float mn, float mx, out float scale, out int zp) {
  precise float min_neg = min(mn, 0.0), max_pos = max(mx, 0.0);
  precise float width = max_pos - min_neg;
  scale = max(div_rn(width, float(p.qmax - p.qmin)), uintBitsToFloat(0x34000000u));
  const float r = roundEven(-div_rn(-min_neg, scale));
  precise float z = float(p.qmin) - r;
  zp = int(min(max(z, float(p.qmin)), float(p.qmax)));
}

void observe() {
  float lo = x_[p.x_offset], hi = x_[p.x_offset + 1];
  for (uint r = 1; r < p.n; ++r)
    lo = min(lo, x_[p.x_offset + 2 * r]), hi = max(hi, x_[p.x_offset + 2 * r + 1]);
  if (isnan(lo) || isnan(hi) || isinf(lo) || isinf(hi) || lo > hi) {
    if (atomicCompSwap(status_[0], 0u, BERTRT_VK_ERROR_RANGE) == 0u) {
      status_[1] = floatBitsToUint(lo);
      status_[2] = floatBitsToUint(hi);
    }
    return;
  }
  if (p.cols != 0) {  // the first batch
    out_[p.out_offset] = lo;
    out_[p.out_offset + 1] = hi;
    return;
  }
  precise float d0 = p.scale * (lo - out_[p.out_offset]), d1 = p.scale * (hi - out_[p.out_offset + 1]);
  precise float m0 = out_[p.out_offset] + d0, m1 = out_[p.out_offset + 1] + d1;
  out_[p.out_offset] = m0;
  out_[p.out_offset + 1] = m1;
}

void main() {
  const uint g = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (OP == 5) {
    if (g == 0u) observe();
    return;
  }
  if (OP == 3) {
    if (g >= p.n) return;
    // Skipped, not += 0: −0 + 0 would turn into +0.
    if (BYTE_U(bytes_, p.bytes_offset + g) != 0u)
      out_[p.out_offset + g] = out_[p.out_offset + g] + x_[p.x_offset + g];
    return;
  }
  const bool writes_bytes = OP == 2 || p.has_mask != 0;
  const uint lead = writes_bytes ? p.bytes_offset & 3u : 0u;  // bytes before element 0 in word 0
  const uint first = (writes_bytes ? p.bytes_offset >> 2 : 0u) + g;
  float observed_scale = p.scale;
  int observed_zp = p.zero_point;
  if (OP == 4) affine_qparams(scale_[p.scale_offset], scale_[p.scale_offset + 1], observed_scale, observed_zp);
  uint word = 0u, keep = 0u;
  for (uint b = 0; b < 4u; ++b) {
    const uint i = g * 4u + b - lead;  // wraps for the lead bytes, which are then kept
    if (g * 4u + b < lead || i >= p.n) {
      keep |= 0xffu << (8u * b);
      continue;
    }
    float scale = observed_scale;
    int zp = observed_zp;
    if (OP == 1) {
      const uint r = i / p.cols;
      scale = scale_[p.scale_offset + r];
      zp = 0;
      if (bad_scale(scale)) {
        if (atomicCompSwap(status_[0], 0u, BERTRT_VK_ERROR_SCALE) == 0u) {
          status_[1] = r;
          status_[2] = floatBitsToUint(scale);
        }
        continue;
      }
    }
    const float inv = div_rn(1.0, scale);
    precise float q = roundEven(x_[p.x_offset + i] * inv) + float(zp);
    uint byte;
    if (OP == 2) {
      byte = uint(min(max(q, 0.0), 255.0));
    } else {
      const float c = min(max(q, float(p.qmin)), float(p.qmax));
      precise float v = (c - float(zp)) * scale;
      out_[p.out_offset + i] = v;
      byte = q >= float(p.qmin) && q <= float(p.qmax) ? 1u : 0u;
    }
    word |= byte << (8u * b);
  }
  if (!writes_bytes || keep == 0xffffffffu) return;
  if (keep != 0u) word |= bytes_[first] & keep;  // the neighbours' bytes of a partial word
  bytes_[first] = word;
}
