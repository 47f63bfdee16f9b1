// The formulas a backend shares with src/quant: the symmetric int8 scale of a weight row and the
// affine qparams of an activation range. Backends cannot include src/quant (layering), and the
// fake-quant ops (backend) and the int8 export (host code) must compute the same bits.
#pragma once

#include <cfloat>
#include <cmath>

namespace bertrt {

// scale = max(absmax / ((qmax − qmin) / 2), FLT_EPSILON): torch divides by the Python float
// (qmax − qmin) / 2 in float32 tensor arithmetic (torch.ao.quantization observer,
// _calculate_qparams with qscheme per_channel_symmetric).
inline float symmetric_scale_rule(float absmax, int qmin, int qmax) {
  const float half_range = static_cast<float>(qmax - qmin) / 2.0f;
  return std::fmax(absmax / half_range, FLT_EPSILON);
}

// per_tensor_affine of a finite range min ≤ max: min_neg = min(min_val, 0), max_pos =
// max(max_val, 0), scale = max((max_pos − min_neg) / (qmax − qmin), eps), zero_point =
// clamp(qmin − round_half_even(min_neg / scale), qmin, qmax), all in float32 (torch's
// _calculate_qparams).
inline void affine_qparams_rule(float min_val, float max_val, int qmin, int qmax, float* scale,
                                int* zero_point) {
  const float min_neg = std::fmin(min_val, 0.0f);
  const float max_pos = std::fmax(max_val, 0.0f);
  *scale = std::fmax((max_pos - min_neg) / static_cast<float>(qmax - qmin), FLT_EPSILON);
  const float zp = static_cast<float>(qmin) - std::nearbyint(min_neg / *scale);
  *zero_point = static_cast<int>(
      std::fmin(std::fmax(zp, static_cast<float>(qmin)), static_cast<float>(qmax)));
}

}  // namespace bertrt
