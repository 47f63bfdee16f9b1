// The sentence-embedding head's ops and the CoSENT loss, written as the formulas of backend.h
// (sums in double, rounded once per output).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/reference/reference_backend.h"

namespace bertrt {

namespace {

// m[t] of sequence b: a token that is neither padding nor part of the skipped prompt.
bool counted(const int32_t* mask, const int32_t* prompt_length, int b, int T, int t) {
  return mask[size_t(b) * T + t] != 0 && t >= prompt_length[b];
}

// The weight of position t in a weighted pooling (mean: 1, weightedmean: t + 1), and the
// divisor of the pooled sum: max(Σ weights, 1e-9), its square root for kMeanSqrtLen.
double position_weight(Pooling mode, int t) {
  return mode == Pooling::kWeightedMean ? double(t + 1) : 1.0;
}

double divisor(Pooling mode, const int32_t* mask, const int32_t* prompt_length, int b, int T) {
  float total = 0;  // in float, as upstream sums the float mask (exact: small integers)
  for (int t = 0; t < T; ++t)
    if (counted(mask, prompt_length, b, T, t)) total += float(position_weight(mode, t));
  const float clamped = std::max(total, 1e-9f);
  return mode == Pooling::kMeanSqrtLen ? std::sqrt(double(clamped)) : double(clamped);
}

// lasttoken's position: the last counted t, 0 when there is none.
int last_counted(const int32_t* mask, const int32_t* prompt_length, int b, int T) {
  for (int t = T - 1; t >= 0; --t)
    if (counted(mask, prompt_length, b, T, t)) return t;
  return 0;
}

// max's position per column: the first t holding the maximum of the masked values (a masked
// position reads −1e9), as torch.max returns it.
int argmax_position(const float* h, const int32_t* mask, const int32_t* prompt_length, int b,
                    int T, int H, int c) {
  int arg = 0;
  float v = counted(mask, prompt_length, b, T, 0) ? h[c] : -1e9f;
  for (int t = 1; t < T; ++t) {
    const float x = counted(mask, prompt_length, b, T, t) ? h[size_t(t) * H + c] : -1e9f;
    if (x > v) v = x, arg = t;
  }
  return arg;
}

}  // namespace

void ReferenceBackend::pool_tokens(float* out, int ldo, const float* hidden, const int32_t* mask,
                                   const int32_t* prompt_length, int B, int T, int H,
                                   Pooling mode) {
  for (int b = 0; b < B; ++b) {
    const float* h = hidden + size_t(b) * T * H;
    float* o = out + size_t(b) * ldo;
    switch (mode) {
      case Pooling::kCls:
        std::copy(h, h + H, o);
        break;
      case Pooling::kMax:
        for (int c = 0; c < H; ++c) {
          const int t = argmax_position(h, mask, prompt_length, b, T, H, c);
          o[c] = counted(mask, prompt_length, b, T, t) ? h[size_t(t) * H + c] : -1e9f;
        }
        break;
      case Pooling::kLastToken: {
        const int t = last_counted(mask, prompt_length, b, T);
        const float m = counted(mask, prompt_length, b, T, t) ? 1.0f : 0.0f;
        for (int c = 0; c < H; ++c) o[c] = h[size_t(t) * H + c] * m;
        break;
      }
      case Pooling::kMean:
      case Pooling::kMeanSqrtLen:
      case Pooling::kWeightedMean: {
        const double div = divisor(mode, mask, prompt_length, b, T);
        for (int c = 0; c < H; ++c) {
          double sum = 0;
          for (int t = 0; t < T; ++t)
            if (counted(mask, prompt_length, b, T, t))
              sum += position_weight(mode, t) * h[size_t(t) * H + c];
          o[c] = float(sum / div);
        }
        break;
      }
    }
  }
}

void ReferenceBackend::pool_tokens_backward(float* dhidden, const float* dout, int ldd,
                                            const float* hidden, const int32_t* mask,
                                            const int32_t* prompt_length, int B, int T, int H,
                                            Pooling mode) {
  for (int b = 0; b < B; ++b) {
    const float* h = hidden + size_t(b) * T * H;
    float* dh = dhidden + size_t(b) * T * H;
    const float* d = dout + size_t(b) * ldd;
    switch (mode) {
      case Pooling::kCls:
        for (int c = 0; c < H; ++c) dh[c] += d[c];
        break;
      case Pooling::kMax:
        for (int c = 0; c < H; ++c) {
          const int t = argmax_position(h, mask, prompt_length, b, T, H, c);
          if (counted(mask, prompt_length, b, T, t)) dh[size_t(t) * H + c] += d[c];
        }
        break;
      case Pooling::kLastToken: {
        const int t = last_counted(mask, prompt_length, b, T);
        if (counted(mask, prompt_length, b, T, t))
          for (int c = 0; c < H; ++c) dh[size_t(t) * H + c] += d[c];
        break;
      }
      case Pooling::kMean:
      case Pooling::kMeanSqrtLen:
      case Pooling::kWeightedMean: {
        const double div = divisor(mode, mask, prompt_length, b, T);
        for (int t = 0; t < T; ++t) {
          if (!counted(mask, prompt_length, b, T, t)) continue;
          const double w = position_weight(mode, t) / div;
          for (int c = 0; c < H; ++c) {
            float& g = dh[size_t(t) * H + c];
            g = float(g + w * d[c]);
          }
        }
        break;
      }
    }
  }
}

void ReferenceBackend::l2_normalize_rows(float* y, const float* x, int ldx, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + size_t(r) * ldx;
    double ss = 0;
    for (int c = 0; c < cols; ++c) ss += double(xr[c]) * xr[c];
    const double norm = std::max(std::sqrt(ss), 1e-12);
    for (int c = 0; c < cols; ++c) y[size_t(r) * cols + c] = float(xr[c] / norm);
  }
}

void ReferenceBackend::l2_normalize_rows_backward(float* dx, int lddx, const float* x, int ldx,
                                                  const float* dy, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + size_t(r) * ldx;
    const float* g = dy + size_t(r) * cols;
    float* o = dx + size_t(r) * lddx;
    double ss = 0;
    for (int c = 0; c < cols; ++c) ss += double(xr[c]) * xr[c];
    const double norm = std::sqrt(ss);
    if (norm <= 1e-12) {
      for (int c = 0; c < cols; ++c) o[c] = float(o[c] + g[c] / 1e-12);
      continue;
    }
    double yg = 0;  // y·dy
    for (int c = 0; c < cols; ++c) yg += xr[c] / norm * g[c];
    for (int c = 0; c < cols; ++c) o[c] = float(o[c] + (g[c] - xr[c] / norm * yg) / norm);
  }
}

void ReferenceBackend::cosent_loss(float* dcos, double* loss, const float* cos,
                                   const float* labels, int n, float scale, float grad_scale) {
  // log(exp(0) + Σ exp(z_ij)) with z_ij = scale·(cos_i − cos_j), from mx = max(0, z_ij).
  double mx = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (labels[i] < labels[j]) mx = std::max(mx, double(scale) * (double(cos[i]) - cos[j]));
  double sum = std::exp(-mx);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (labels[i] < labels[j]) sum += std::exp(double(scale) * (double(cos[i]) - cos[j]) - mx);
  *loss = mx + std::log(sum);
  if (!dcos) return;
  // ∂loss/∂cos_k = scale · (Σ_j p_kj − Σ_i p_ik), p_ij the softmax weight of pair (i, j).
  for (int k = 0; k < n; ++k) {
    double g = 0;
    for (int j = 0; j < n; ++j) {
      if (labels[k] < labels[j]) g += std::exp(double(scale) * (double(cos[k]) - cos[j]) - mx);
      if (labels[j] < labels[k]) g -= std::exp(double(scale) * (double(cos[j]) - cos[k]) - mx);
    }
    dcos[k] = float(double(grad_scale) * scale * g / sum);
  }
}

}  // namespace bertrt
