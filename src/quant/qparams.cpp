#include "quant/qparams.h"

#include <cfloat>
#include <cmath>

#include "backends/quant_rules.h"
#include "core/error.h"

namespace bertrt {

QParams affine_qparams(float min_val, float max_val, int qmin, int qmax) {
  if (!std::isfinite(min_val) || !std::isfinite(max_val) || min_val > max_val)
    fail("quantization range [{}, {}]: expected finite min ≤ max", min_val, max_val);
  const float min_neg = std::fmin(min_val, 0.0f);
  const float max_pos = std::fmax(max_val, 0.0f);
  QParams qp;
  qp.scale = std::fmax((max_pos - min_neg) / static_cast<float>(qmax - qmin), FLT_EPSILON);
  // torch.round is round-half-to-even, as is nearbyint in the default rounding mode.
  const float r = std::nearbyint(min_neg / qp.scale);
  const float zp = static_cast<float>(qmin) - r;
  qp.zero_point = static_cast<int>(std::fmin(std::fmax(zp, static_cast<float>(qmin)),
                                             static_cast<float>(qmax)));
  return qp;
}

float symmetric_scale(float absmax, int qmin, int qmax) {
  return symmetric_scale_rule(absmax, qmin, qmax);
}

}  // namespace bertrt
