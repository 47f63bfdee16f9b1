// int8 deployment: weights stored as int8 + one fp32 scale per output channel (symmetric, zero
// point 0; qparams.h), and the int8 Linear that runs on them:
//   out = linear_u8s8(quantize_u8(x; act scale, act zero point), Wq; w_scale, w_sum) + bias
// Its integers are exactly those of the QAT fake-quant forward (fake_quant.h): the same rounding
// of the same products, so the int8 Linear equals fq(x)·fq(W)ᵀ + b up to the float rounding of
// the fp32 GEMM, not a second quantization error.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "backends/device_array.h"
#include "quant/qparams.h"

namespace bertrt {

// A borrowed int8 weight [rows, cols] (e.g. memory-mapped from the model file).
struct Int8WeightView {
  const int8_t* q = nullptr;         // [rows, cols]
  const float* scale = nullptr;      // [rows]
  const int32_t* row_sum = nullptr;  // [rows], Σ_c q[r, c] (the activation zero-point correction)
  int rows = 0, cols = 0;
  const int8_t* packed =
      nullptr;  // q in the backend's GEMM layout (Backend::pack_q8_weight) or null
};

// An owned int8 weight.
struct Int8Weight {
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<int32_t> row_sum;
  int rows = 0, cols = 0;
  Int8WeightView view() const { return {q.data(), scale.data(), row_sum.data(), rows, cols}; }
};

// An int8 weight as a backend reads it: the host arrays themselves where the backend takes host
// pointers, else copies uploaded on first use (a weight's host arrays never change in place).
// The backend's packed layout of q is made here on first use, once per backend.
struct Int8WeightMirror {
  ConstMirror<int8_t> q;
  ConstMirror<float> scale;
  ConstMirror<int32_t> row_sum;
  DeviceArray<int8_t> packed;
  const int8_t* packed_src = nullptr;
  Int8WeightView on(Backend& be, const Int8WeightView& w) {
    Int8WeightView v{q.on(be, w.q, size_t(w.rows) * w.cols), scale.on(be, w.scale, size_t(w.rows)),
                     row_sum.on(be, w.row_sum, size_t(w.rows)), w.rows, w.cols};
    const size_t bytes = be.q8_packed_weight_bytes(w.rows, w.cols);
    if (bytes == 0) return v;
    if (packed.backend() != &be || !packed.alive() || packed_src != w.q || packed.size() != bytes) {
      be.pack_q8_weight(packed.ensure(be, bytes), v.q, w.rows, w.cols);
      packed_src = w.q;
    }
    v.packed = packed.data();
    return v;
  }
};

// q[r, c] = clamp(nearbyint(w[r, c] · (1.0f / scale[r])), −127, 127): the fake-quant forward's
// integers. Throws bertrt::Error for a scale that is not positive and finite.
void quantize_rows_s8(int8_t* q, const float* w, const float* scale, int rows, int cols);
// Σ_c q[r, c] per row.
std::vector<int32_t> row_sums_s8(const int8_t* q, int rows, int cols);

// Export of an fp32 weight [rows, cols] (out_features × in_features, or an embedding table): scales
// as fake_quant_weight computes them (symmetric_scale of each row's max |w|), then the integers.
Int8Weight quantize_weight_s8(const float* w, int rows, int cols);

// The int8 Linear: out [rows, w.rows] = dequant(quantize_u8(x) · w.qᵀ) + bias (bias [w.rows] or
// nullptr). x [rows, w.cols] with row stride lda (0 = w.cols); w in backend memory; act: the
// activation's frozen qparams. `scratch` holds the uint8 activations (grown as needed).
void int8_linear_forward(Backend& be, float* out, const float* x, int rows, int lda,
                         const Int8WeightView& w, QParams act, const float* bias,
                         DeviceArray<uint8_t>& scratch);

}  // namespace bertrt
