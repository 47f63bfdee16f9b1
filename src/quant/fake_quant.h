// Quantization-aware training: the fake-quant steps a QAT Linear applies before its GEMM
// (torch.ao.quantization.FakeQuantize semantics; the numbers are the backend ops of
// backends/backend.h, these helpers add the parameter rules of qparams.h / observer.h).
//
// A QAT Linear, out = fq_act(x) · fq_w(W)ᵀ + b:
//   forward:  fake_quant_activation(be, obs, ranges, xq, xmask, x, rows, in_f, lda);
//             fake_quant_weight(be, wq, wmask, wscale, W, out_f, in_f);
//             linear_forward(be, out, xq, wq, b, rows, in_f, out_f);
//   backward: linear_backward(be, dxq, dW_q, db, dout, xq, wq, ...) into zeroed temporaries, then
//             be.fake_quant_backward(dx, xmask, dxq, rows·in_f)  (dx row stride in_f) and
//             be.fake_quant_backward(dW, wmask, dW_q, out_f·in_f): the straight-through
//             estimator, gradient passed where the rounded value was inside the clamp range.
// Embeddings (`--qat-embeddings int8`): the per-row rule is local to a row, so fake-quantizing the
// GATHERED rows [n, C] with fake_quant_weight gives exactly the rows of the fake-quantized table;
// the backward masks dout the same way before the scatter-add.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/backend.h"
#include "backends/device_array.h"
#include "quant/observer.h"
#include "quant/qparams.h"

namespace bertrt {

// FakeQuantize.forward for an activation x [rows, cols] (row stride ld ≥ cols; 0 = cols): folds
// x's range into `obs` unless it is frozen, then fake-quantizes with obs.qparams() into out
// [rows, cols] (contiguous) and mask [rows, cols] (nullptr: not written). All of it backend ops
// (min_max into `ranges`, observe_min_max, fake_quant_observed): nothing is read back.
void fake_quant_activation(Backend& be, ActivationObserver& obs, DeviceArray<float>& ranges,
                              float* out, uint8_t* mask, const float* x, int rows, int cols,
                              int ld = 0);

// The weight fake-quant, per output channel: scale[r] = symmetric_scale(max_c |w[r, c]|) from the
// CURRENT weights (recomputed every call, as torch's per-channel weight observer does each
// forward), then out = fq(w) over [-127, 127]. w, out, mask [rows, cols]; scale [rows] written
// (export reuses it, so the int8 model holds the very integers QAT trained with). out may alias w.
void fake_quant_weight(Backend& be, float* out, uint8_t* mask, float* scale, const float* w,
                       int rows, int cols);

}  // namespace bertrt
