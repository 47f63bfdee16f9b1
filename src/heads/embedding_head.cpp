#include "heads/embedding_head.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace bertrt {

void dense_activation(const std::string& name, float* x, size_t n) {
  if (name == "torch.nn.modules.activation.Tanh") {
    for (size_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
  } else if (name == "torch.nn.modules.activation.ReLU") {
    for (size_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
  } else if (name == "torch.nn.modules.activation.GELU") {  // nn.GELU(): the exact erf form
    for (size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * float(M_SQRT1_2)));
  } else if (name == "torch.nn.modules.activation.Sigmoid") {
    for (size_t i = 0; i < n; ++i) x[i] = 1.0f / (1.0f + std::exp(-x[i]));
  } else if (name != "torch.nn.modules.linear.Identity") {
    fail("Dense activation_function '{}' is not supported", name);
  }
}

std::vector<float> dense_forward(const EmbeddingConfig& e, const ParamLayout& layout,
                                 const float* params, const float* pooled, int B, int H,
                                 DenseActs* acts) {
  int width = e.pooled_dim(H);
  std::vector<float> x(pooled, pooled + size_t(B) * width);
  if (acts) *acts = {};
  for (const DenseConfig& d : e.dense) {
    const float* W = params + layout.at(d.path + ".linear.weight").offset;
    const float* bias = d.bias ? params + layout.at(d.path + ".linear.bias").offset : nullptr;
    std::vector<float> y(size_t(B) * d.out_features);
    for (int b = 0; b < B; ++b) {
      const float* in = x.data() + size_t(b) * width;
      for (int o = 0; o < d.out_features; ++o) {
        const float* w = W + size_t(o) * d.in_features;
        double acc = 0;  // one rounding per output: the row order of float32 GEMMs varies anyway
        for (int i = 0; i < d.in_features; ++i) acc += double(w[i]) * in[i];
        y[size_t(b) * d.out_features + o] = float(acc) + (bias ? bias[o] : 0.0f);
      }
    }
    if (acts) acts->in.push_back(x), acts->out.push_back(y);  // out: before the activation
    dense_activation(d.activation_function, y.data(), y.size());
    x = std::move(y);
    width = d.out_features;
  }
  return x;
}

std::vector<float> finish_embeddings(std::vector<float> x, int B, int D, int dimensions,
                                     bool normalize) {
  const int keep = dimensions > 0 && dimensions < D ? dimensions : D;
  std::vector<float> out(size_t(B) * keep);
  for (int b = 0; b < B; ++b) {
    const float* in = x.data() + size_t(b) * D;
    float* o = out.data() + size_t(b) * keep;
    std::copy(in, in + keep, o);
    if (!normalize) continue;
    double ss = 0;
    for (int i = 0; i < keep; ++i) ss += double(o[i]) * o[i];
    const float norm = std::max(float(std::sqrt(ss)), 1e-12f);
    for (int i = 0; i < keep; ++i) o[i] /= norm;
  }
  return out;
}

void dense_activation_backward(const std::string& name, const float* x, const float* y, float* dy,
                               size_t n) {
  if (name == "torch.nn.modules.activation.Tanh") {
    for (size_t i = 0; i < n; ++i) dy[i] *= 1.0f - y[i] * y[i];
  } else if (name == "torch.nn.modules.activation.ReLU") {
    for (size_t i = 0; i < n; ++i) dy[i] = x[i] > 0 ? dy[i] : 0.0f;
  } else if (name == "torch.nn.modules.activation.GELU") {
    const float k = 0.3989422804014327f;  // 1/sqrt(2π)
    for (size_t i = 0; i < n; ++i)
      dy[i] *= 0.5f * (1.0f + std::erf(x[i] * float(M_SQRT1_2))) + x[i] * k * std::exp(-0.5f * x[i] * x[i]);
  } else if (name == "torch.nn.modules.activation.Sigmoid") {
    for (size_t i = 0; i < n; ++i) dy[i] *= y[i] * (1.0f - y[i]);
  } else if (name != "torch.nn.modules.linear.Identity") {
    fail("Dense activation_function '{}' is not supported", name);
  }
}

std::vector<float> dense_backward(const EmbeddingConfig& e, const ParamLayout& layout,
                                  const float* params, float* grads, const DenseActs& acts,
                                  std::vector<float> dy, int B, int H) {
  for (size_t k = e.dense.size(); k-- > 0;) {
    const DenseConfig& d = e.dense[k];
    const std::vector<float>& x = acts.in[k];
    const std::vector<float>& pre = acts.out[k];
    std::vector<float> y = pre;
    dense_activation(d.activation_function, y.data(), y.size());
    dense_activation_backward(d.activation_function, pre.data(), y.data(), dy.data(), dy.size());
    const size_t wo = layout.at(d.path + ".linear.weight").offset;
    const float* W = params + wo;
    float* dW = grads + wo;
    float* db = d.bias ? grads + layout.at(d.path + ".linear.bias").offset : nullptr;
    std::vector<float> dx(size_t(B) * d.in_features, 0.0f);
    for (int b = 0; b < B; ++b) {
      const float* xin = x.data() + size_t(b) * d.in_features;
      const float* g = dy.data() + size_t(b) * d.out_features;
      float* gx = dx.data() + size_t(b) * d.in_features;
      for (int o = 0; o < d.out_features; ++o) {
        if (db) db[o] += g[o];
        float* dw = dW + size_t(o) * d.in_features;
        const float* w = W + size_t(o) * d.in_features;
        for (int i = 0; i < d.in_features; ++i) {
          dw[i] += g[o] * xin[i];
          gx[i] += g[o] * w[i];
        }
      }
    }
    dy = std::move(dx);
  }
  (void)H;
  return dy;
}

std::vector<float> l2_normalize(const std::vector<float>& x, int B, int D) {
  return finish_embeddings(x, B, D, 0, true);
}

std::vector<float> l2_normalize_backward(const std::vector<float>& x, const std::vector<float>& dy,
                                         int B, int D) {
  std::vector<float> dx(x.size());
  for (int b = 0; b < B; ++b) {
    const float* xi = x.data() + size_t(b) * D;
    const float* g = dy.data() + size_t(b) * D;
    float* o = dx.data() + size_t(b) * D;
    double ss = 0;
    for (int i = 0; i < D; ++i) ss += double(xi[i]) * xi[i];
    const double norm = std::sqrt(ss);
    if (norm <= 1e-12) {  // the clamp: x / 1e-12, a constant divisor
      for (int i = 0; i < D; ++i) o[i] = float(g[i] / 1e-12);
      continue;
    }
    double yg = 0;
    for (int i = 0; i < D; ++i) yg += xi[i] / norm * g[i];
    for (int i = 0; i < D; ++i) o[i] = float((g[i] - xi[i] / norm * yg) / norm);
  }
  return dx;
}

}  // namespace bertrt
