#include "quant/fake_quant.h"

#include <algorithm>

namespace bertrt {

void fake_quant_activation(Backend& be, ActivationObserver& obs, DeviceArray<float>& ranges,
                           float* out, uint8_t* mask, const float* x, int rows, int cols, int ld) {
  if (ld == 0) ld = cols;
  const size_t n = static_cast<size_t>(rows) * cols;
  if (n == 0) return;  // torch skips empty tensors too
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
    obs.observe(be, mm, parts);
  }
  // torch FakeQuantize's initial buffers (scale 1, zero point 0) until the first batch.
  const QParams initial;
  const float* range = obs.initialized() ? obs.range(be) : nullptr;
  for (int r = 0; r < (ld == cols ? 1 : rows); ++r) {
    const size_t o = static_cast<size_t>(r) * cols, m = ld == cols ? n : static_cast<size_t>(cols);
    const float* xr = x + static_cast<size_t>(r) * ld;
    uint8_t* mr = mask ? mask + o : nullptr;
    if (range)
      be.fake_quant_observed(out + o, mr, xr, m, range, kActQMin, kActQMax);
    else
      be.fake_quant_per_tensor(out + o, mr, xr, m, initial.scale, initial.zero_point, kActQMin,
                               kActQMax);
  }
}

void fake_quant_weight(Backend& be, float* out, uint8_t* mask, float* scale, const float* w,
                       int rows, int cols) {
  be.symmetric_scale_rows(scale, w, rows, cols, kWeightQMin, kWeightQMax);
  be.fake_quant_per_row(out, mask, w, scale, rows, cols, kWeightQMin, kWeightQMax);
}

}  // namespace bertrt
