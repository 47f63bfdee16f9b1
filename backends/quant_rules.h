// The one formula a backend shares with src/quant: the symmetric int8 scale of a weight row.
// Backends cannot include src/quant (layering), and the fake-quant forward (a backend op) and the
// int8 export (host code) must compute the same bits.
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

}  // namespace bertrt
