// int8 deployment: weights stored as int8 + one fp32 scale per output channel (symmetric, zero
// point 0; qparams.h), and the int8 Linear that runs on them:
//   out = linear_u8s8(quantize_u8(x; act scale, act zero point), Wq; w_scale, w_sum) + bias
// Its integers are exactly those of the QAT fake-quant forward (fake_quant.h): the same rounding
// of the same products, so the int8 Linear equals fq(x)·fq(W)ᵀ + b up to the float rounding of
// the fp32 GEMM, not a second quantization error.
#pragma once

#include <cstdint>
#include <memory>
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
  // q lies in a model file's mapping and was never written: once the backend holds its own copy
  // (packed or uploaded), the pages of q are given back (MappedFile::release_pages).
  bool q_in_file = false;
};

// An int8 weight: its integers owned (q) or, loaded from a model file, used in place from its
// mapping (`mapped`, kept valid by `keep`; q empty); the scales and row sums owned.
struct Int8Weight {
  std::vector<int8_t> q;
  const int8_t* mapped = nullptr;
  std::shared_ptr<const void> keep;
  std::vector<float> scale;
  std::vector<int32_t> row_sum;
  int rows = 0, cols = 0;
  const int8_t* data() const { return mapped ? mapped : q.data(); }
  Int8WeightView view() const {
    return {data(), scale.data(), row_sum.data(), rows, cols, nullptr, mapped != nullptr};
  }
};

// An int8 weight as a backend reads it: the host arrays themselves where the backend takes host
// pointers, else copies uploaded on first use (a weight's host arrays never change in place).
// The backend's packed layout of q is made here on first use, once per backend, for a GEMM weight
// (pack = false for a table read by rows: the int8 embedding lookup).
struct Int8WeightMirror {
  ConstMirror<int8_t> q;
  ConstMirror<float> scale;
  ConstMirror<int32_t> row_sum;
  DeviceArray<int8_t> packed;
  const int8_t* packed_src = nullptr;
  Int8WeightView on(Backend& be, const Int8WeightView& w, bool pack = true) {
    const size_t n = size_t(w.rows) * w.cols;
    const bool upload = !be.accepts_host_pointers() && n > 0 && (q_src != w.q || !q_sent);
    Int8WeightView v{q.on(be, w.q, n), scale.on(be, w.scale, size_t(w.rows)),
                     row_sum.on(be, w.row_sum, size_t(w.rows)), w.rows, w.cols};
    if (upload) {
      q_src = w.q, q_sent = true;
      if (w.q_in_file) release_file_pages(w.q, n);  // the backend has its copy
    }
    const size_t bytes = pack ? be.q8_packed_weight_bytes(w.rows, w.cols) : 0;
    if (bytes == 0) return v;
    if (packed.backend() != &be || !packed.alive() || packed_src != w.q || packed.size() != bytes) {
      be.pack_q8_weight(packed.ensure(be, bytes), v.q, w.rows, w.cols);
      packed_src = w.q;
      // One int8 copy resident: the packed one (a kernel that still reads q maps it again).
      if (w.q_in_file && be.accepts_host_pointers()) release_file_pages(w.q, n);
    }
    v.packed = packed.data();
    return v;
  }

 private:
  const int8_t* q_src = nullptr;
  bool q_sent = false;
  static void release_file_pages(const int8_t* q, size_t n);
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
// The same from x already quantized with `act` (xq [rows, w.cols], contiguous).
void int8_linear_forward_u8(Backend& be, float* out, const uint8_t* xq, int rows,
                            const Int8WeightView& w, QParams act, const float* bias);

}  // namespace bertrt
