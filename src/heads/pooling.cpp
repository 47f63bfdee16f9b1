#include "heads/pooling.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace bertrt {

namespace {

// lasttoken's position: the last t with m[t] = 1, 0 when there is none (Pooling.forward).
int last_unmasked(const std::vector<float>& m) {
  for (int t = int(m.size()) - 1; t >= 0; --t)
    if (m[t] != 0) return t;
  return 0;
}

}  // namespace

void pooling_forward(const PoolingConfig& p, const float* hidden, const int32_t* mask,
                     const int32_t* prompt_length, int B, int T, int H, float* out) {
  const size_t width = size_t(p.modes()) * H;
  std::vector<float> m(T), sum(H), wsum(H);
  for (int b = 0; b < B; ++b) {
    const float* h = hidden + size_t(b) * T * H;
    const int skip = p.include_prompt || !prompt_length ? 0 : prompt_length[b];
    for (int t = 0; t < T; ++t)
      m[t] = t < skip ? 0.0f : mask ? float(mask[size_t(b) * T + t] != 0) : 1.0f;
    float* o = out + size_t(b) * width;
    if (p.cls_token) {
      std::copy(h, h + H, o);
      o += H;
    }
    if (p.max_tokens) {
      for (int c = 0; c < H; ++c) {
        float v = m[0] != 0 ? h[c] : -1e9f;
        for (int t = 1; t < T; ++t) v = std::max(v, m[t] != 0 ? h[size_t(t) * H + c] : -1e9f);
        o[c] = v;
      }
      o += H;
    }
    if (p.mean_tokens || p.mean_sqrt_len_tokens) {
      std::fill(sum.begin(), sum.end(), 0.0f);
      float count = 0;
      for (int t = 0; t < T; ++t) {
        count += m[t];
        for (int c = 0; c < H; ++c) sum[c] += h[size_t(t) * H + c] * m[t];
      }
      count = std::max(count, 1e-9f);
      if (p.mean_tokens) {
        for (int c = 0; c < H; ++c) o[c] = sum[c] / count;
        o += H;
      }
      if (p.mean_sqrt_len_tokens) {
        const float root = std::sqrt(count);
        for (int c = 0; c < H; ++c) o[c] = sum[c] / root;
        o += H;
      }
    }
    if (p.weightedmean_tokens) {
      std::fill(wsum.begin(), wsum.end(), 0.0f);
      float weight = 0;
      for (int t = 0; t < T; ++t) {
        const float w = m[t] * float(t + 1);
        weight += w;
        for (int c = 0; c < H; ++c) wsum[c] += h[size_t(t) * H + c] * w;
      }
      weight = std::max(weight, 1e-9f);
      for (int c = 0; c < H; ++c) o[c] = wsum[c] / weight;
      o += H;
    }
    if (p.lasttoken) {
      const int last = last_unmasked(m);
      for (int c = 0; c < H; ++c) o[c] = h[size_t(last) * H + c] * m[last];
      o += H;
    }
  }
}

void pooling_backward(const PoolingConfig& p, const float* dout, const float* hidden,
                      const int32_t* mask, const int32_t* prompt_length, int B, int T, int H,
                      float* dhidden) {
  const size_t width = size_t(p.modes()) * H;
  std::vector<float> m(T);
  for (int b = 0; b < B; ++b) {
    const float* h = hidden + size_t(b) * T * H;
    float* dh = dhidden + size_t(b) * T * H;
    const int skip = p.include_prompt || !prompt_length ? 0 : prompt_length[b];
    float count = 0, weight = 0;
    for (int t = 0; t < T; ++t) {
      m[t] = t < skip ? 0.0f : mask ? float(mask[size_t(b) * T + t] != 0) : 1.0f;
      count += m[t];
      weight += m[t] * float(t + 1);
    }
    count = std::max(count, 1e-9f);
    weight = std::max(weight, 1e-9f);
    const float* d = dout + size_t(b) * width;
    if (p.cls_token) {
      for (int c = 0; c < H; ++c) dh[c] += d[c];
      d += H;
    }
    if (p.max_tokens) {
      for (int c = 0; c < H; ++c) {
        int arg = 0;
        float v = m[0] != 0 ? h[c] : -1e9f;
        for (int t = 1; t < T; ++t) {
          const float x = m[t] != 0 ? h[size_t(t) * H + c] : -1e9f;
          if (x > v) v = x, arg = t;
        }
        if (m[arg] != 0) dh[size_t(arg) * H + c] += d[c];  // a masked maximum is the constant -1e9
      }
      d += H;
    }
    if (p.mean_tokens) {
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < H; ++c) dh[size_t(t) * H + c] += d[c] * m[t] / count;
      d += H;
    }
    if (p.mean_sqrt_len_tokens) {
      const float root = std::sqrt(count);
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < H; ++c) dh[size_t(t) * H + c] += d[c] * m[t] / root;
      d += H;
    }
    if (p.weightedmean_tokens) {
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < H; ++c) dh[size_t(t) * H + c] += d[c] * m[t] * float(t + 1) / weight;
      d += H;
    }
    if (p.lasttoken) {
      const int last = last_unmasked(m);
      for (int c = 0; c < H; ++c) dh[size_t(last) * H + c] += d[c] * m[last];
    }
  }
}

}  // namespace bertrt
