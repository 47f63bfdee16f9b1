// The quantization state of one nn.Linear and the Linear forward/backward it selects
// (model/linear.h dispatches here when a Linear has a QuantLinear in a mode other than float):
//
//   kCalibrate  post-training quantization: fp32 math, the input's running min/max recorded
//               (torch's MinMaxObserver during PTQ calibration, which observes float activations);
//   kFakeQuant  quantization-aware training: out = fq_act(x) · fq_w(W)ᵀ + b, the activation range
//               from a moving-average observer, the weight scales from the current W
//               (fake_quant.h); the backward is the straight-through estimator on both;
//   kInt8       deployment: out = linear_u8s8(quantize_u8(x), Wq) + b (int8_weight.h), the same
//               integers as kFakeQuant; no weight gradient (the backward of a frozen int8
//               Linear, dX only, is model/lora_int8.h's, for adapters over an int8 base).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "quant/int8_weight.h"
#include "quant/observer.h"
#include "quant/qparams.h"

namespace bertrt {

enum class QuantMode { kFloat, kCalibrate, kFakeQuant, kInt8 };
const char* quant_mode_name(QuantMode mode);  // "float", "calibrate", "fake-quant", "int8"

// The input gradient of frozen kInt8 Linears (model/lora_int8.h, adapters over an int8 base): the
// dequantized weight of the Linear in hand [out, in] and the row ids that dequantize it, one set
// for all of a model's Linears (BertQuant owns it).
struct Int8BackwardScratch {
  DeviceArray<float> weight;
  DeviceArray<int32_t> rows;
  int row_ids = 0;  // rows holds 0 .. row_ids − 1, uploaded to ids_on
  const Backend* ids_on = nullptr;
};

struct QuantLinear {
  QuantMode mode = QuantMode::kFloat;
  // Set by the model before each forward: fold this forward's input range into `observer`
  // (training forwards of QAT, every forward of calibration). Eval forwards use the range as is.
  bool observe = false;
  ActivationObserver observer;  // the input's range: its qparams are the activation's scale/zp

  // kCalibrate: the min/max over every calibration batch (finish_calibration() stores it).
  float calib_min = 0.0f, calib_max = 0.0f;
  bool calib_seen = false;

  // kInt8: the weight (w8 views either own8 or a table shared with another user, the tied MLM
  // decoder reading the int8 word embeddings; both on the host) and the frozen activation qparams.
  Int8Weight own8;
  Int8WeightView w8;
  Int8WeightMirror dev8;  // w8 as the backend reads it
  QParams act;

  // Backend memory. kFakeQuant: what the forward keeps for the backward, and backward scratch.
  DeviceArray<float> xq, wq, wscale, dxq, dwq;  // [rows, in], [out, in], [out], ...
  DeviceArray<uint8_t> xmask, wmask;            // STE masks of xq and wq
  DeviceArray<uint8_t> xu8;                     // kInt8: the quantized input
  DeviceArray<float> ranges;                    // min/max read back for the observers
  Int8BackwardScratch* backward = nullptr;      // kInt8 backward (lora_int8.h): the model's

  // Ends calibration: the observer gets the recorded min/max, frozen. Throws bertrt::Error when
  // no calibration batch reached this Linear.
  void finish_calibration(const char* name);
  // kInt8 from the current fp32 weight [out_f, in_f] (per-row symmetric int8, the scales
  // fake_quant_weight computes) and the observer's range. Throws when the observer never saw data.
  void make_int8(const float* weight, int out_f, int in_f, const char* name);
};

// out [rows, out_f] = the Linear of `q.mode` on inp [rows, in_f] (row stride lda, 0 = in_f).
void quant_linear_forward(Backend& be, QuantLinear& q, float* out, const float* inp,
                          const float* weight, const float* bias, int rows, int in_f, int out_f,
                          int lda);

// kFakeQuant only (after a forward of the same Linear): dinp += mask_x ⊙ (dout · fq(W)) (row
// stride ldd, 0 = in_f; skipped when nullptr), dweight += mask_w ⊙ (doutᵀ · fq(x)),
// dbias += Σ dout. Throws bertrt::Error in the other modes (an int8 model is inference-only).
void quant_linear_backward(Backend& be, QuantLinear& q, float* dinp, float* dweight, float* dbias,
                           const float* dout, int rows, int in_f, int out_f, int ldd);

// Inference fusions of int8 Linears (the encoder layer's; same outputs as quant_linear_forward of
// each Linear in turn). int8_same_input_forward returns false, doing nothing, where it does not
// apply.
//
// Linears of one input (BERT's query, key and value): all kInt8 with the same input qparams (they
// observe the same tensor, so QAT and calibration give them the same range) quantize it once.
// outs[i] [rows, out_f] = Linear i of inp [rows, in_f].
bool int8_same_input_forward(Backend& be, QuantLinear* const* qs, float* const* outs,
                             const float* const* biases, int count, const float* inp, int rows,
                             int in_f, int out_f);
// BERT's feed-forward up to the output Linear's GEMM: y [rows, C] = out(gelu(inter(x))), both
// kInt8 (int8_ffn_applies); the intermediate leaves inter's GEMM quantized for `out`
// (Backend::linear_u8s8_gelu_u8). xq [rows, C]: x quantized with inter.act, written by the
// LayerNorm before into inter.xu8 (int8_ffn_input). pre, act: [rows, I] scratch (pre holds inter's
// fp32 output after).
bool int8_ffn_applies(const QuantLinear* inter, const QuantLinear* out, int C, int I);
uint8_t* int8_ffn_input(Backend& be, QuantLinear& inter, int rows, int C);
void int8_ffn_forward(Backend& be, QuantLinear& inter, QuantLinear& out, float* y, float* pre,
                      float* act, const uint8_t* xq, const float* inter_b, const float* out_b,
                      int rows, int C, int I, Gelu kind);

}  // namespace bertrt
