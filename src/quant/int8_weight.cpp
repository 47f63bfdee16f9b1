#include "quant/int8_weight.h"

#include <cmath>

#include "core/error.h"
#include "core/mapped_file.h"

namespace bertrt {

void Int8WeightMirror::release_file_pages(const int8_t* q, size_t n) {
  MappedFile::release_pages(q, n);
}

void quantize_rows_s8(int8_t* q, const float* w, const float* scale, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    if (!(scale[r] > 0.0f) || !std::isfinite(scale[r]))
      fail("quantize_rows_s8: row {}: scale {} must be positive and finite", r, scale[r]);
    const float inv = 1.0f / scale[r];
    for (int c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r) * cols + c;
      const float v = std::nearbyint(w[i] * inv);
      q[i] = static_cast<int8_t>(std::fmin(std::fmax(v, static_cast<float>(kWeightQMin)),
                                           static_cast<float>(kWeightQMax)));
    }
  }
}

std::vector<int32_t> row_sums_s8(const int8_t* q, int rows, int cols) {
  std::vector<int32_t> sums(static_cast<size_t>(rows), 0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) sums[r] += q[static_cast<size_t>(r) * cols + c];
  return sums;
}

Int8Weight quantize_weight_s8(const float* w, int rows, int cols) {
  Int8Weight out;
  out.rows = rows;
  out.cols = cols;
  out.scale.resize(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    float m = 0.0f;
    for (int c = 0; c < cols; ++c)
      m = std::fmax(m, std::fabs(w[static_cast<size_t>(r) * cols + c]));
    out.scale[r] = symmetric_scale(m, kWeightQMin, kWeightQMax);
  }
  out.q.resize(static_cast<size_t>(rows) * cols);
  quantize_rows_s8(out.q.data(), w, out.scale.data(), rows, cols);
  out.row_sum = row_sums_s8(out.q.data(), rows, cols);
  return out;
}

void int8_linear_forward(Backend& be, float* out, const float* x, int rows, int lda,
                         const Int8WeightView& w, QParams act, const float* bias,
                         DeviceArray<uint8_t>& scratch) {
  const int K = w.cols;
  if (lda == 0) lda = K;
  uint8_t* xq = scratch.ensure(be, static_cast<size_t>(rows) * K);
  if (lda == K) {
    be.quantize_u8(xq, x, static_cast<size_t>(rows) * K, act.scale, act.zero_point);
  } else {
    for (int r = 0; r < rows; ++r)
      be.quantize_u8(xq + static_cast<size_t>(r) * K, x + static_cast<size_t>(r) * lda,
                     static_cast<size_t>(K), act.scale, act.zero_point);
  }
  int8_linear_forward_u8(be, out, xq, rows, w, act, bias);
}

void int8_linear_forward_u8(Backend& be, float* out, const uint8_t* xq, int rows,
                            const Int8WeightView& w, QParams act, const float* bias) {
  const int K = w.cols;
  if (w.packed)
    be.linear_u8s8_packed(out, w.rows, xq, K, act.scale, act.zero_point, w.q, w.packed, w.scale,
                          w.row_sum, bias, rows, w.rows, K);
  else
    be.linear_u8s8(out, w.rows, xq, K, act.scale, act.zero_point, w.q, w.scale, w.row_sum, bias,
                   rows, w.rows, K);
}

}  // namespace bertrt
