// nn.Linear: out = inp · weightᵀ + bias, weight [out_features, in_features] (PyTorch layout).
#pragma once

#include "backends/backend.h"

namespace bertrt {

// out [rows, out_f] = inp [rows, in_f] · weightᵀ + bias (bias may be nullptr).
// lda is the row stride of inp (≥ in_f; e.g. T·C to pick the [CLS] rows of [B, T, C]).
void linear_forward(Backend& be, float* out, const float* inp, const float* weight,
                    const float* bias, int rows, int in_f, int out_f, int lda = 0);

// dinp += dout · weight (skipped when dinp is nullptr); dweight += doutᵀ · inp; dbias += Σ dout.
// ldd is the row stride of dinp and lda of inp (0 = in_f).
void linear_backward(Backend& be, float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int rows, int in_f, int out_f,
                     int lda = 0, int ldd = 0);

}  // namespace bertrt
