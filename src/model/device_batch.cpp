#include "model/device_batch.h"

#include <algorithm>

#include "heads/span_head.h"

namespace bertrt {
namespace {

// Appends n ints (or zeros when src is nullptr) to the staging block at a 16-element (64-byte)
// boundary; returns their offset.
template <typename T>
size_t stage(std::vector<T>& block, const T* src, size_t n) {
  const size_t at = (block.size() + 15) / 16 * 16;
  block.resize(at + n, T(0));
  if (src) std::copy_n(src, n, block.begin() + at);
  return at;
}

}  // namespace

void DeviceBatch::upload(Backend& be, const EncoderInputs& in, const Targets& t, float* mask_add) {
  const int B = in.B, T = in.T;
  const size_t N = size_t(in.rows()), P = size_t(t.num_masked);
  ints_.clear();
  floats_.clear();
  constexpr size_t kNone = size_t(-1);
  auto opt = [&](const int32_t* p, size_t n) { return p ? stage(ints_, p, n) : kNone; };
  const size_t ids = stage(ints_, in.input_ids, N);
  const size_t types = stage(ints_, in.token_type_ids, N);
  const size_t pos = stage<int32_t>(ints_, nullptr, N);
  size_t first = kNone;
  if (in.packed()) {  // positions restart at each sequence
    cu_.assign(in.cu_seqlens, in.cu_seqlens + B + 1);
    for (int b = 0; b < B; ++b)
      for (int r = cu_[size_t(b)]; r < cu_[size_t(b) + 1]; ++r)
        ints_[pos + size_t(r)] = r - cu_[size_t(b)];
    first = stage(ints_, cu_.data(), size_t(B));
  } else {
    for (int b = 0; b < B; ++b)
      for (int j = 0; j < T; ++j) ints_[pos + size_t(b) * T + j] = j;
  }
  const size_t mlm_pos = opt(t.mlm_positions, P), mlm_lab = opt(t.mlm_labels, P);
  const size_t nsp = opt(t.nsp_labels, size_t(B)), labels = opt(t.labels, size_t(B));
  const size_t token = opt(t.token_labels, N);
  size_t start = kNone, end = kNone;
  if (t.start_positions && t.end_positions) {
    start = stage(ints_, clamp_span_positions(t.start_positions, B, T).data(), size_t(B));
    end = stage(ints_, clamp_span_positions(t.end_positions, B, T).data(), size_t(B));
  }
  const size_t scores = t.scores ? stage(floats_, t.scores, size_t(B)) : kNone;

  const int32_t* dint = dev_ints_.ensure(be, ints_.size());
  be.upload(dev_ints_.data(), ints_.data(), ints_.size() * sizeof(int32_t));
  const float* dfloat = nullptr;
  if (!floats_.empty()) {
    dfloat = dev_floats_.ensure(be, floats_.size());
    be.upload(dev_floats_.data(), floats_.data(), floats_.size() * sizeof(float));
  }
  if (!in.packed()) {  // a packed batch has no padding to mask
    std::vector<float> mask(N);
    for (size_t i = 0; i < N; ++i)
      mask[i] = (!in.attention_mask || in.attention_mask[i]) ? 0.0f : -10000.0f;
    be.upload(mask_add, mask.data(), N * sizeof(float));
  }

  // Both views of the same offsets: the backend's and the staging copy's.
  auto view = [&](const int32_t* base, const float* fbase, Targets& v) {
    auto at = [&](size_t o) { return o == kNone ? nullptr : base + o; };
    v = Targets{};
    v.mlm_positions = at(mlm_pos), v.mlm_labels = at(mlm_lab), v.num_masked = t.num_masked;
    v.nsp_labels = at(nsp), v.labels = at(labels), v.token_labels = at(token);
    v.start_positions = at(start), v.end_positions = at(end);
    v.scores = scores == kNone ? nullptr : fbase + scores;
  };
  view(dint, dfloat, targets);
  view(ints_.data(), floats_.data(), host);
  inputs = EncoderInputs{B, T, dint + ids, dint + types, nullptr};
  if (in.packed()) inputs.cu_seqlens = cu_.data(), inputs.first_rows = dint + first;
  position_ids = dint + pos;
}

}  // namespace bertrt
