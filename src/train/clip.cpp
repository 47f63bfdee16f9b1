#include "train/clip.h"

#include <algorithm>
#include <cmath>

namespace bertrt {

double global_grad_norm(const float* grads, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(grads[i]) * grads[i];
  return std::sqrt(sum);
}

double clip_grad_norm(float* grads, size_t n, double max_norm) {
  const double norm = global_grad_norm(grads, n);
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0) {
    const float c = static_cast<float>(coef);  // torch multiplies in the gradient dtype
    for (size_t i = 0; i < n; ++i) grads[i] *= c;
  }
  return norm;
}

double clip_grad_norm_tf(float* grads, size_t n, double clip_norm) {
  const double norm = global_grad_norm(grads, n);
  // clip_ops.py: scale = clip_norm * minimum(1.0 / use_norm, 1.0 / clip_norm), all float32.
  const float c = static_cast<float>(clip_norm);
  const float scale = c * std::min(1.0f / static_cast<float>(norm), 1.0f / c);
  if (scale != 1.0f)
    for (size_t i = 0; i < n; ++i) grads[i] *= scale;
  return norm;
}

}  // namespace bertrt
