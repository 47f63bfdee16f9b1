#include "quant/fake_quant.h"

#include <algorithm>

namespace bertrt {

QParams fake_quant_activation(Backend& be, ActivationObserver& obs, float* out, uint8_t* mask,
                              const float* x, int rows, int cols, int ld) {
  if (ld == 0) ld = cols;
  const size_t n = static_cast<size_t>(rows) * cols;
  if (n == 0) return obs.qparams();
  if (ld == cols) {
    obs.observe(be, x, n);
    const QParams qp = obs.qparams();
    be.fake_quant_per_tensor(out, mask, x, n, qp.scale, qp.zero_point, kActQMin, kActQMax);
    return qp;
  }
  // Strided rows (e.g. the pooler's [CLS] rows of [B, T, C]): one range over all rows.
  if (!obs.frozen()) {
    float lo = 0.0f, hi = 0.0f;
    for (int r = 0; r < rows; ++r) {
      float l, h;
      be.min_max(&l, &h, x + static_cast<size_t>(r) * ld, static_cast<size_t>(cols));
      lo = r == 0 ? l : std::min(lo, l);
      hi = r == 0 ? h : std::max(hi, h);
    }
    obs.observe(lo, hi);
  }
  const QParams qp = obs.qparams();
  for (int r = 0; r < rows; ++r) {
    const size_t o = static_cast<size_t>(r) * cols;
    be.fake_quant_per_tensor(out + o, mask ? mask + o : nullptr, x + static_cast<size_t>(r) * ld,
                             static_cast<size_t>(cols), qp.scale, qp.zero_point, kActQMin,
                             kActQMax);
  }
  return qp;
}

void fake_quant_weight(Backend& be, float* out, uint8_t* mask, float* scale, const float* w,
                       int rows, int cols) {
  be.absmax_rows(scale, w, rows, cols);
  for (int r = 0; r < rows; ++r) scale[r] = symmetric_scale(scale[r], kWeightQMin, kWeightQMax);
  be.fake_quant_per_row(out, mask, w, scale, rows, cols, kWeightQMin, kWeightQMax);
}

}  // namespace bertrt
