// Global-norm gradient clipping (torch.nn.utils.clip_grad_norm_ with the L2 norm), over the flat
// gradient buffer. Padding between tensors must be zero (callers zero the whole buffer each step).
#pragma once

#include <cstddef>

namespace bertrt {

// sqrt(Σ g²) over n floats, accumulated in double.
double global_grad_norm(const float* grads, size_t n);

// Scales grads by coef = max_norm / (norm + 1e-6) when coef < 1 (torch's rule: the 1e-6 keeps the
// division finite). Returns the norm before clipping (what torch returns, for logging).
double clip_grad_norm(float* grads, size_t n, double max_norm);

}  // namespace bertrt
