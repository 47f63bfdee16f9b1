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
                                 const float* params, const float* pooled, int B, int H) {
  int width = e.pooled_dim(H);
  std::vector<float> x(pooled, pooled + size_t(B) * width);
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

}  // namespace bertrt
