// nn.Linear: out = inp · weightᵀ + bias, weight [out_features, in_features] (PyTorch layout).
// With a QuantLinear `q` (quant/quant_linear.h) in a mode other than float, the same call runs the
// calibrating, fake-quant (QAT) or int8 Linear instead; q == nullptr is the plain fp32 Linear.
#pragma once

#include "backends/backend.h"

namespace bertrt {

struct QuantLinear;

// out [rows, out_f] = inp [rows, in_f] · weightᵀ + bias (bias may be nullptr).
// lda is the row stride of inp (≥ in_f; e.g. T·C to pick the [CLS] rows of [B, T, C]).
void linear_forward(Backend& be, float* out, const float* inp, const float* weight,
                    const float* bias, int rows, int in_f, int out_f, int lda = 0,
                    QuantLinear* q = nullptr);

// A Linear no gradient flows through (inference), with its epilogue:
//   out [rows, out_f] = gelu(inp · weightᵀ + bias) + residual
// bias, residual [rows, out_f] and the GELU each optional; pre [rows, out_f] is scratch for the
// value before the GELU (see Backend::linear_forward_inference, which fp32 Linears run; a
// quantized `q` runs linear_forward, gelu_forward and add in turn). The same floats as those ops.
void linear_forward_inference(Backend& be, float* out, float* pre, const float* inp,
                              const float* weight, const float* bias, const float* residual,
                              int rows, int in_f, int out_f, std::optional<Gelu> gelu,
                              QuantLinear* q = nullptr);

// dinp += dout · weight (skipped when dinp is nullptr); dweight += doutᵀ · inp; dbias += Σ dout.
// ldd is the row stride of dinp and lda of inp (0 = in_f). A fake-quant `q` back-propagates
// through what its forward kept (fq(inp), fq(weight)) with the straight-through masks; an int8
// one computes dinp only (model/lora_int8.h) and throws bertrt::Error for dweight or dbias.
void linear_backward(Backend& be, float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int rows, int in_f, int out_f,
                     int lda = 0, int ldd = 0, QuantLinear* q = nullptr);

}  // namespace bertrt
