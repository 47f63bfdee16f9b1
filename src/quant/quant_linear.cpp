#include "quant/quant_linear.h"

#include <algorithm>

#include "core/error.h"
#include "quant/fake_quant.h"

namespace bertrt {

const char* quant_mode_name(QuantMode mode) {
  switch (mode) {
    case QuantMode::kFloat:
      return "float";
    case QuantMode::kCalibrate:
      return "calibrate";
    case QuantMode::kFakeQuant:
      return "fake-quant";
    case QuantMode::kInt8:
      return "int8";
  }
  return "?";
}

void QuantLinear::finish_calibration(const char* name) {
  if (!calib_seen)
    fail("calibration: no batch reached Linear '{}' (its head was never run?)", name);
  observer.restore(calib_min, calib_max, 1, /*frozen=*/true);
}

void QuantLinear::make_int8(const float* weight, int out_f, int in_f, const char* name) {
  if (!observer.initialized())
    fail(
        "int8 export: Linear '{}' has no activation range (no QAT training step or calibration "
        "batch ever reached it)",
        name);
  own8 = quantize_weight_s8(weight, out_f, in_f);
  w8 = own8.view();
  dev8 = Int8WeightMirror{};
  act = observer.qparams();
  mode = QuantMode::kInt8;
}

namespace {

// out = inp · wᵀ + bias in fp32 (inp contiguous unless lda says otherwise).
void float_linear(Backend& be, float* out, const float* inp, const float* w, const float* bias,
                  int rows, int in_f, int out_f, int lda) {
  be.gemm(false, true, rows, out_f, in_f, 1.0f, inp, lda, w, in_f, 0.0f, out, out_f);
  if (bias) be.bias_add(out, bias, rows, out_f);
}

// Calibration: the running min/max over every row of every batch (one read-back per call).
void record_range(Backend& be, QuantLinear& q, const float* inp, int rows, int in_f, int lda) {
  float* mm = q.ranges.ensure(be, 2 * size_t(rows));
  for (int r = 0; r < rows; ++r)
    be.min_max(mm + 2 * r, mm + 2 * r + 1, inp + size_t(r) * lda, size_t(in_f));
  const std::vector<float> h = read_back(be, mm, 2 * size_t(rows));
  for (int r = 0; r < rows; ++r) {
    const float lo = h[2 * r], hi = h[2 * r + 1];
    q.calib_min = q.calib_seen ? std::min(q.calib_min, lo) : lo;
    q.calib_max = q.calib_seen ? std::max(q.calib_max, hi) : hi;
    q.calib_seen = true;
  }
}

}  // namespace

void quant_linear_forward(Backend& be, QuantLinear& q, float* out, const float* inp,
                          const float* weight, const float* bias, int rows, int in_f, int out_f,
                          int lda) {
  if (lda == 0) lda = in_f;
  if (rows == 0) return;
  switch (q.mode) {
    case QuantMode::kFloat:
      float_linear(be, out, inp, weight, bias, rows, in_f, out_f, lda);
      return;
    case QuantMode::kCalibrate:
      if (q.observe) record_range(be, q, inp, rows, in_f, lda);
      float_linear(be, out, inp, weight, bias, rows, in_f, out_f, lda);
      return;
    case QuantMode::kFakeQuant: {
      const size_t nx = size_t(rows) * in_f, nw = size_t(out_f) * in_f;
      float* xq = q.xq.ensure(be, nx);
      float* wq = q.wq.ensure(be, nw);
      // An eval forward uses the range as it stands (frozen for this call only).
      const bool frozen = q.observer.frozen();
      if (!q.observe) q.observer.set_frozen(true);
      fake_quant_activation(be, q.observer, q.ranges, xq, q.xmask.ensure(be, nx), inp, rows, in_f,
                            lda);
      q.observer.set_frozen(frozen);
      fake_quant_weight(be, wq, q.wmask.ensure(be, nw), q.wscale.ensure(be, size_t(out_f)), weight,
                        out_f, in_f);
      float_linear(be, out, xq, wq, bias, rows, in_f, out_f, in_f);
      return;
    }
    case QuantMode::kInt8:
      if (q.w8.rows != out_f || q.w8.cols != in_f)
        fail("int8 Linear: weight is [{}, {}], the call needs [{}, {}]", q.w8.rows, q.w8.cols,
             out_f, in_f);
      int8_linear_forward(be, out, inp, rows, lda, q.dev8.on(be, q.w8), q.act, bias, q.xu8);
      return;
  }
}

void quant_linear_backward(Backend& be, QuantLinear& q, float* dinp, float* dweight, float* dbias,
                           const float* dout, int rows, int in_f, int out_f, int ldd) {
  if (q.mode != QuantMode::kFakeQuant)
    fail(
        "backward through a {} Linear: an int8 or calibrating model is inference-only (train "
        "the float or fake-quant model, then export)",
        quant_mode_name(q.mode));
  if (ldd == 0) ldd = in_f;
  const size_t nx = size_t(rows) * in_f, nw = size_t(out_f) * in_f;
  if (q.xq.size() < nx || q.wq.size() != nw)
    fail("fake-quant Linear backward: the last forward had another shape (rows {} vs {})", rows,
         q.xq.size() / std::max(in_f, 1));
  if (dinp) {
    float* dxq = q.dxq.ensure(be, nx);
    be.fill(dxq, 0.0f, nx);
    be.gemm(false, false, rows, in_f, out_f, 1.0f, dout, out_f, q.wq.data(), in_f, 1.0f, dxq, in_f);
    if (ldd == in_f) {
      be.fake_quant_backward(dinp, q.xmask.data(), dxq, nx);
    } else {
      for (int r = 0; r < rows; ++r)
        be.fake_quant_backward(dinp + size_t(r) * ldd, q.xmask.data() + size_t(r) * in_f,
                               dxq + size_t(r) * in_f, size_t(in_f));
    }
  }
  if (dweight) {
    float* dwq = q.dwq.ensure(be, nw);
    be.fill(dwq, 0.0f, nw);
    be.gemm(true, false, out_f, in_f, rows, 1.0f, dout, out_f, q.xq.data(), in_f, 1.0f, dwq, in_f);
    be.fake_quant_backward(dweight, q.wmask.data(), dwq, nw);
  }
  if (dbias) be.bias_backward(dbias, dout, rows, out_f);
}

namespace {

bool is_int8(const QuantLinear* q, int out_f, int in_f) {
  return q && q->mode == QuantMode::kInt8 && q->w8.rows == out_f && q->w8.cols == in_f;
}

}  // namespace

bool int8_same_input_forward(Backend& be, QuantLinear* const* qs, float* const* outs,
                             const float* const* biases, int count, const float* inp, int rows,
                             int in_f, int out_f) {
  if (count < 1 || rows == 0) return false;
  for (int i = 0; i < count; ++i) {
    if (!is_int8(qs[i], out_f, in_f)) return false;
    if (qs[i]->act.scale != qs[0]->act.scale || qs[i]->act.zero_point != qs[0]->act.zero_point)
      return false;
  }
  const QParams act = qs[0]->act;
  uint8_t* xq = qs[0]->xu8.ensure(be, size_t(rows) * in_f);
  be.quantize_u8(xq, inp, size_t(rows) * in_f, act.scale, act.zero_point);
  for (int i = 0; i < count; ++i)
    int8_linear_forward_u8(be, outs[i], xq, rows, qs[i]->dev8.on(be, qs[i]->w8), act, biases[i]);
  return true;
}

bool int8_ffn_applies(const QuantLinear* inter, const QuantLinear* out, int C, int I) {
  return is_int8(inter, I, C) && is_int8(out, C, I);
}

uint8_t* int8_ffn_input(Backend& be, QuantLinear& inter, int rows, int C) {
  return inter.xu8.ensure(be, size_t(rows) * C);
}

void int8_ffn_forward(Backend& be, QuantLinear& inter, QuantLinear& out, float* y, float* pre,
                      float* act, const uint8_t* xq, const float* inter_b, const float* out_b,
                      int rows, int C, int I, Gelu kind) {
  if (rows == 0) return;
  const Int8WeightView wi = inter.dev8.on(be, inter.w8);
  uint8_t* hq = out.xu8.ensure(be, size_t(rows) * I);
  be.linear_u8s8_gelu_u8(hq, pre, act, xq, C, inter.act.scale, inter.act.zero_point, wi.q,
                         wi.packed, wi.scale, wi.row_sum, inter_b, rows, I, C, kind, out.act.scale,
                         out.act.zero_point);
  int8_linear_forward_u8(be, y, hq, rows, out.dev8.on(be, out.w8), out.act, out_b);
}

}  // namespace bertrt
