// Global-norm gradient clipping over the flat gradient buffer, in the two published forms.
// Padding between tensors must be zero (callers zero the whole buffer each step). The gradients
// are backend memory: the norm is a backend reduction read back once (the host decides whether
// to clip and whether the step is finite), the scaling a backend op.
#pragma once

#include <cstddef>

#include "backends/backend.h"

namespace bertrt {

// sqrt(Σ g²) over n floats, accumulated in double.
double global_grad_norm(Backend& be, const float* grads, size_t n);

// torch.nn.utils.clip_grad_norm_ (L2): scales grads by coef = max_norm / (norm + 1e-6) when
// coef < 1 (the 1e-6 keeps the division finite). Returns the norm before clipping (what torch
// returns, for logging).
double clip_grad_norm(Backend& be, float* grads, size_t n, double max_norm);

// tf.clip_by_global_norm as google-research/bert optimization.py calls it (clip_norm 1.0):
// grads *= clip_norm · min(1/norm, 1/clip_norm), computed in float32 like TF and applied always
// (a factor of exactly 1 below the threshold when clip_norm is 1). Returns the norm before clipping.
double clip_grad_norm_tf(Backend& be, float* grads, size_t n, double clip_norm);

}  // namespace bertrt
