// The sentence-embedding head's ops on the cpu backend: float loops over contiguous columns (the
// arithmetic of sentence-transformers' float32 Pooling), split over sequences or rows, so that
// every output is computed by one thread in the serial order whatever the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"

namespace bertrt {

namespace {

constexpr size_t kGrainFloats = 16384;  // below this much work a pool hand-off costs more

size_t grain_of(size_t floats_per_item) {
  return floats_per_item ? (kGrainFloats + floats_per_item - 1) / floats_per_item : 1;
}

// m[t] of sequence b (backend.h pool_tokens).
void token_weights(const int32_t* mask, const int32_t* prompt_length, int b, int T, float* m) {
  for (int t = 0; t < T; ++t)
    m[t] = mask[size_t(b) * T + t] != 0 && t >= prompt_length[b] ? 1.0f : 0.0f;
}

int last_counted(const float* m, int T) {
  for (int t = T - 1; t >= 0; --t)
    if (m[t] != 0) return t;
  return 0;
}

// The divisor of a weighted pooling: max(Σ w, 1e-9) (its root for kMeanSqrtLen), w = m[t] or
// (t + 1)·m[t], summed in float as upstream sums the float mask (exact: small integers).
float pool_divisor(Pooling mode, const float* m, int T) {
  float total = 0;
  for (int t = 0; t < T; ++t) total += mode == Pooling::kWeightedMean ? m[t] * float(t + 1) : m[t];
  total = std::max(total, 1e-9f);
  return mode == Pooling::kMeanSqrtLen ? std::sqrt(total) : total;
}

}  // namespace

void CpuBackend::pool_tokens(float* out, int ldo, const float* hidden, const int32_t* mask,
                             const int32_t* prompt_length, int B, int T, int H, Pooling mode) {
  pool_.parallel_for(size_t(std::max(B, 0)), grain_of(size_t(T) * H), [&](size_t b0, size_t b1) {
    std::vector<float> m(static_cast<size_t>(T)), sum(static_cast<size_t>(H));
    for (size_t b = b0; b < b1; ++b) {
      const float* h = hidden + b * T * H;
      float* o = out + b * size_t(ldo);
      token_weights(mask, prompt_length, int(b), T, m.data());
      switch (mode) {
        case Pooling::kCls:
          std::copy(h, h + H, o);
          break;
        case Pooling::kMax:
          for (int c = 0; c < H; ++c) o[c] = m[0] != 0 ? h[c] : -1e9f;
          for (int t = 1; t < T; ++t) {
            const float* ht = h + size_t(t) * H;
            if (m[t] != 0)
              for (int c = 0; c < H; ++c) o[c] = std::max(o[c], ht[c]);
            else
              for (int c = 0; c < H; ++c) o[c] = std::max(o[c], -1e9f);
          }
          break;
        case Pooling::kLastToken: {
          const int t = last_counted(m.data(), T);
          for (int c = 0; c < H; ++c) o[c] = h[size_t(t) * H + c] * m[size_t(t)];
          break;
        }
        case Pooling::kMean:
        case Pooling::kMeanSqrtLen:
        case Pooling::kWeightedMean: {
          std::fill(sum.begin(), sum.end(), 0.0f);
          for (int t = 0; t < T; ++t) {
            const float w = mode == Pooling::kWeightedMean ? m[size_t(t)] * float(t + 1) : m[size_t(t)];
            const float* ht = h + size_t(t) * H;
            for (int c = 0; c < H; ++c) sum[size_t(c)] += ht[c] * w;
          }
          const float div = pool_divisor(mode, m.data(), T);
          for (int c = 0; c < H; ++c) o[c] = sum[size_t(c)] / div;
          break;
        }
      }
    }
  });
}

void CpuBackend::pool_tokens_backward(float* dhidden, const float* dout, int ldd,
                                      const float* hidden, const int32_t* mask,
                                      const int32_t* prompt_length, int B, int T, int H,
                                      Pooling mode) {
  pool_.parallel_for(size_t(std::max(B, 0)), grain_of(size_t(T) * H), [&](size_t b0, size_t b1) {
    std::vector<float> m(static_cast<size_t>(T)), best(static_cast<size_t>(H));
    std::vector<int> arg(static_cast<size_t>(H));
    for (size_t b = b0; b < b1; ++b) {
      const float* h = hidden + b * T * H;
      float* dh = dhidden + b * T * H;
      const float* d = dout + b * size_t(ldd);
      token_weights(mask, prompt_length, int(b), T, m.data());
      switch (mode) {
        case Pooling::kCls:
          for (int c = 0; c < H; ++c) dh[c] += d[c];
          break;
        case Pooling::kMax:
          // The first position holding each column's maximum (strict >, as the forward's order).
          for (int c = 0; c < H; ++c) best[size_t(c)] = m[0] != 0 ? h[c] : -1e9f, arg[size_t(c)] = 0;
          for (int t = 1; t < T; ++t) {
            const float* ht = h + size_t(t) * H;
            for (int c = 0; c < H; ++c) {
              const float x = m[size_t(t)] != 0 ? ht[c] : -1e9f;
              if (x > best[size_t(c)]) best[size_t(c)] = x, arg[size_t(c)] = t;
            }
          }
          for (int c = 0; c < H; ++c)
            if (m[size_t(arg[size_t(c)])] != 0) dh[size_t(arg[size_t(c)]) * H + c] += d[c];
          break;
        case Pooling::kLastToken: {
          const int t = last_counted(m.data(), T);
          for (int c = 0; c < H; ++c) dh[size_t(t) * H + c] += d[c] * m[size_t(t)];
          break;
        }
        case Pooling::kMean:
        case Pooling::kMeanSqrtLen:
        case Pooling::kWeightedMean: {
          const float div = pool_divisor(mode, m.data(), T);
          for (int t = 0; t < T; ++t) {
            const float w = mode == Pooling::kWeightedMean ? m[size_t(t)] * float(t + 1) : m[size_t(t)];
            if (w == 0) continue;
            float* g = dh + size_t(t) * H;
            for (int c = 0; c < H; ++c) g[c] += d[c] * w / div;
          }
          break;
        }
      }
    }
  });
}

void CpuBackend::l2_normalize_rows(float* y, const float* x, int ldx, int rows, int cols) {
  pool_.parallel_for(size_t(std::max(rows, 0)), grain_of(size_t(cols)), [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * size_t(ldx);
      float* yr = y + r * size_t(cols);
      double ss = 0;  // in double: one rounding for the norm, as the host head did
      for (int c = 0; c < cols; ++c) ss += double(xr[c]) * xr[c];
      const float norm = std::max(float(std::sqrt(ss)), 1e-12f);
      for (int c = 0; c < cols; ++c) yr[c] = xr[c] / norm;
    }
  });
}

void CpuBackend::l2_normalize_rows_backward(float* dx, int lddx, const float* x, int ldx,
                                            const float* dy, int rows, int cols) {
  pool_.parallel_for(size_t(std::max(rows, 0)), grain_of(size_t(cols)), [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * size_t(ldx);
      const float* g = dy + r * size_t(cols);
      float* o = dx + r * size_t(lddx);
      double ss = 0;
      for (int c = 0; c < cols; ++c) ss += double(xr[c]) * xr[c];
      const double norm = std::sqrt(ss);
      if (norm <= 1e-12) {
        for (int c = 0; c < cols; ++c) o[c] += float(g[c] / 1e-12);
        continue;
      }
      double yg = 0;
      for (int c = 0; c < cols; ++c) yg += xr[c] / norm * g[c];
      for (int c = 0; c < cols; ++c) o[c] += float((g[c] - xr[c] / norm * yg) / norm);
    }
  });
}

}  // namespace bertrt
