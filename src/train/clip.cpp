#include "train/clip.h"

#include <algorithm>
#include <cmath>

#include "backends/device_array.h"

namespace bertrt {

double global_grad_norm(Backend& be, const float* grads, size_t n) {
  DeviceArray<double> sum(be, 1);
  be.sum_squares(sum.data(), grads, n);
  return std::sqrt(read_back(be, sum.data(), 1)[0]);
}

double clip_grad_norm(Backend& be, float* grads, size_t n, double max_norm) {
  const double norm = global_grad_norm(be, grads, n);
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0) be.scale(grads, static_cast<float>(coef), n);  // torch multiplies in float
  return norm;
}

double clip_grad_norm_tf(Backend& be, float* grads, size_t n, double clip_norm) {
  const double norm = global_grad_norm(be, grads, n);
  // clip_ops.py: scale = clip_norm * minimum(1.0 / use_norm, 1.0 / clip_norm), all float32.
  const float c = static_cast<float>(clip_norm);
  const float scale = c * std::min(1.0f / static_cast<float>(norm), 1.0f / c);
  if (scale != 1.0f) be.scale(grads, scale, n);
  return norm;
}

}  // namespace bertrt
