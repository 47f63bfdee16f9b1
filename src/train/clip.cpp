#include "train/clip.h"

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

}  // namespace bertrt
