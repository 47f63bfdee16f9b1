#include "quant/fake_quant.h"

#include <algorithm>

namespace bertrt {

QParams fake_quant_activation(Backend& be, ActivationObserver& obs, DeviceArray<float>& ranges,
                              float* out, uint8_t* mask, const float* x, int rows, int cols,
                              int ld) {
  if (ld == 0) ld = cols;
  const size_t n = static_cast<size_t>(rows) * cols;
  if (n == 0) return obs.qparams();  // torch skips empty tensors too
  if (!obs.frozen()) {
    // Strided rows (e.g. the pooler's [CLS] rows of [B, T, C]): one range over all rows, folded
    // in row order.
    const int parts = ld == cols ? 1 : rows;
    float* mm = ranges.ensure(be, 2 * size_t(parts));
    if (parts == 1) {
      be.min_max(mm, mm + 1, x, n);
    } else {
      for (int r = 0; r < rows; ++r)
        be.min_max(mm + 2 * r, mm + 2 * r + 1, x + static_cast<size_t>(r) * ld,
                   static_cast<size_t>(cols));
    }
    const std::vector<float> h = read_back(be, mm, 2 * size_t(parts));
    float lo = h[0], hi = h[1];
    for (int r = 1; r < parts; ++r) lo = std::min(lo, h[2 * r]), hi = std::max(hi, h[2 * r + 1]);
    obs.observe(lo, hi);
  }
  const QParams qp = obs.qparams();
  if (ld == cols) {
    be.fake_quant_per_tensor(out, mask, x, n, qp.scale, qp.zero_point, kActQMin, kActQMax);
    return qp;
  }
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
  be.symmetric_scale_rows(scale, w, rows, cols, kWeightQMin, kWeightQMax);
  be.fake_quant_per_row(out, mask, w, scale, rows, cols, kWeightQMin, kWeightQMax);
}

}  // namespace bertrt
