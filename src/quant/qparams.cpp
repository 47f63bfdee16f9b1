#include "quant/qparams.h"

#include <cfloat>
#include <cmath>

#include "backends/quant_rules.h"
#include "core/error.h"

namespace bertrt {

QParams affine_qparams(float min_val, float max_val, int qmin, int qmax) {
  if (!std::isfinite(min_val) || !std::isfinite(max_val) || min_val > max_val)
    fail("quantization range [{}, {}]: expected finite min ≤ max", min_val, max_val);
  QParams qp;  // torch.round is round-half-to-even, as is nearbyint in the default mode
  affine_qparams_rule(min_val, max_val, qmin, qmax, &qp.scale, &qp.zero_point);
  return qp;
}

float symmetric_scale(float absmax, int qmin, int qmax) {
  return symmetric_scale_rule(absmax, qmin, qmax);
}

}  // namespace bertrt
