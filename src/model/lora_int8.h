// LoRA over an int8 base (QLoRA's idea, Dettmers et al. 2023, arXiv:2305.14314, for bertrt's int8
// models): the base is an int8 model (`bertrt quantize` or `finetune --qat int8` wrote it), frozen;
// the adapters and the task head are fp32 and trained. The forward runs the base's Linears on the
// int8 kernels inference uses and adds each adapter's fp32 update (model/lora.h); the backward
// takes dX through every int8 Linear and computes no gradient of its weight or bias.
// docs/explanation/lora.md, "Over an int8 base", has the design and the measured choices.
#pragma once

#include "backends/backend.h"

namespace bertrt {

struct QuantLinear;

// The backward of a kInt8 Linear whose weight is frozen:
//   dinp [rows, in_f] (row stride ldd, 0 = in_f) += dout [rows, out_f] · dequant(W)
// with dequant(W)[o, i] = scale[o] · q[o, i], the fp32 weight the int8 weight stands for (the
// same floats as BertModel::disable_quantization restores). The quantization of the input to
// uint8 is passed straight through (its derivative taken as 1), as QLoRA passes the rounding of
// its 4-bit weights: the gradient is that of the dequantized fp32 Linear. The weight is
// dequantized on the backend (Backend::embedding_forward_s8 over every row) into the scratch the
// model's Linears share (QuantLinear::backward): one [out_f, in_f] fp32 buffer, the largest
// Linear's, not a float copy of the base. Throws bertrt::Error when dweight or dbias is asked for
// (an int8 weight has no gradient here) or q is not kInt8.
void int8_linear_backward(Backend& be, QuantLinear& q, float* dinp, float* dweight, float* dbias,
                          const float* dout, int rows, int in_f, int out_f, int ldd);

}  // namespace bertrt
