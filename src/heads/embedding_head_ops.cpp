#include "heads/embedding_head_ops.h"

#include <algorithm>

#include "core/error.h"
#include "heads/embedding_head.h"

namespace bertrt {

namespace {

enum class Act { kIdentity, kTanh, kGelu, kHost };

// How a Dense activation runs: Tanh and GELU (nn.GELU(): the exact erf form) are backend ops;
// ReLU and Sigmoid, which no op computes, round-trip through the host (heads/embedding_head.h).
Act act_of(const std::string& name) {
  if (name == "torch.nn.modules.linear.Identity") return Act::kIdentity;
  if (name == "torch.nn.modules.activation.Tanh") return Act::kTanh;
  if (name == "torch.nn.modules.activation.GELU") return Act::kGelu;
  if (!known_dense_activation(name)) fail("Dense activation_function '{}' is not supported", name);
  return Act::kHost;
}

// The Dense module's input: the previous module's output, or the pooled vector.
const float* dense_input(const EmbeddingHeadActs& a, size_t k) {
  if (k == 0) return a.pooled.data();
  return a.out[k - 1].empty() ? a.pre[k - 1].data() : a.out[k - 1].data();
}

}  // namespace

std::vector<Pooling> pooling_modes(const PoolingConfig& p) {
  std::vector<Pooling> m;
  if (p.cls_token) m.push_back(Pooling::kCls);
  if (p.max_tokens) m.push_back(Pooling::kMax);
  if (p.mean_tokens) m.push_back(Pooling::kMean);
  if (p.mean_sqrt_len_tokens) m.push_back(Pooling::kMeanSqrtLen);
  if (p.weightedmean_tokens) m.push_back(Pooling::kWeightedMean);
  if (p.lasttoken) m.push_back(Pooling::kLastToken);
  return m;
}

const float* embedding_head_forward(Backend& be, const EmbeddingConfig& e,
                                    const ParamLayout& layout, const float* params,
                                    const float* hidden, const int32_t* mask,
                                    const int32_t* prompt_length, int B, int T, int H,
                                    EmbeddingHeadActs& a) {
  a.B = B, a.T = T;
  // One upload: the mask and the prompt lengths side by side.
  std::vector<int32_t> ints(size_t(B) * T + size_t(B), 0);
  std::copy(mask, mask + size_t(B) * T, ints.begin());
  if (prompt_length && !e.pooling.include_prompt)
    std::copy(prompt_length, prompt_length + B, ints.begin() + size_t(B) * T);
  int32_t* m = a.mask.ensure(be, ints.size());
  be.upload(m, ints.data(), ints.size() * sizeof(int32_t));
  const int32_t* skip = m + size_t(B) * T;

  const std::vector<Pooling> modes = pooling_modes(e.pooling);
  const int P = e.pooled_dim(H);
  float* pooled = a.pooled.ensure(be, size_t(B) * P);
  for (size_t k = 0; k < modes.size(); ++k)
    be.pool_tokens(pooled + k * H, P, hidden, m, skip, B, T, H, modes[k]);

  a.pre.resize(e.dense.size());
  a.out.resize(e.dense.size());
  const float* x = pooled;
  for (size_t k = 0; k < e.dense.size(); ++k) {
    const DenseConfig& d = e.dense[k];
    const size_t n = size_t(B) * d.out_features;
    const float* W = params + layout.at(d.path + ".linear.weight").offset;
    float* pre = a.pre[k].ensure(be, n);
    be.gemm(false, true, B, d.out_features, d.in_features, 1.0f, x, d.in_features, W,
            d.in_features, 0.0f, pre, d.out_features);  // x · Wᵀ
    if (d.bias)
      be.bias_add(pre, params + layout.at(d.path + ".linear.bias").offset, B, d.out_features);
    const Act act = act_of(d.activation_function);
    if (act == Act::kIdentity) {
      a.out[k].reset();
      x = pre;
      continue;
    }
    float* y = a.out[k].ensure(be, n);
    if (act == Act::kTanh) {
      be.tanh_forward(y, pre, n);
    } else if (act == Act::kGelu) {
      be.gelu_forward(y, pre, n, Gelu::kErf);
    } else {
      std::vector<float> h = read_back(be, static_cast<const float*>(pre), n);
      dense_activation(d.activation_function, h.data(), n);
      be.upload(y, h.data(), n * sizeof(float));
    }
    x = y;
  }
  if (!e.normalize) return x;
  const int D = e.dim(H);
  float* y = a.normalized.ensure(be, size_t(B) * D);
  be.l2_normalize_rows(y, x, D, B, D);
  return y;
}

void embedding_head_backward(Backend& be, const EmbeddingConfig& e, const ParamLayout& layout,
                             const float* params, float* grads, const float* hidden,
                             EmbeddingHeadActs& a, float* dy, int H, float* dhidden) {
  const int B = a.B, T = a.T, D = e.dim(H), P = e.pooled_dim(H);
  size_t widest = size_t(std::max(P, D));
  for (const DenseConfig& d : e.dense) widest = std::max(widest, size_t(d.out_features));
  float* bufs[2] = {a.d0.ensure(be, size_t(B) * widest), a.d1.ensure(be, size_t(B) * widest)};
  float* g = dy;  // ∂loss/∂(the current stage's output)
  auto other = [&](const float* busy1, const float* busy2) {
    return bufs[0] != busy1 && bufs[0] != busy2 ? bufs[0] : bufs[1];
  };
  if (e.normalize) {
    const float* x = e.dense.empty() ? a.pooled.data() : dense_input(a, e.dense.size());
    float* dx = other(g, nullptr);
    be.fill(dx, 0.0f, size_t(B) * D);
    be.l2_normalize_rows_backward(dx, D, x, D, g, B, D);
    g = dx;
  }
  for (size_t k = e.dense.size(); k-- > 0;) {
    const DenseConfig& d = e.dense[k];
    const size_t n = size_t(B) * d.out_features;
    const Act act = act_of(d.activation_function);
    float* gp = g;  // ∂loss/∂pre
    if (act != Act::kIdentity) {
      gp = a.dpre.ensure(be, n);
      if (act == Act::kHost) {
        std::vector<float> pre = read_back(be, static_cast<const float*>(a.pre[k].data()), n),
                           out = read_back(be, static_cast<const float*>(a.out[k].data()), n),
                           dh = read_back(be, static_cast<const float*>(g), n);
        dense_activation_backward(d.activation_function, pre.data(), out.data(), dh.data(), n);
        be.upload(gp, dh.data(), n * sizeof(float));
      } else {
        be.fill(gp, 0.0f, n);
        if (act == Act::kTanh) be.tanh_backward(gp, a.out[k].data(), g, n);
        else be.gelu_backward(gp, a.pre[k].data(), g, n, Gelu::kErf);
      }
    }
    const size_t wo = layout.at(d.path + ".linear.weight").offset;
    const float* x = dense_input(a, k);
    // dW += gpᵀ · x, db += Σ_rows gp, dx = gp · W.
    be.gemm(true, false, d.out_features, d.in_features, B, 1.0f, gp, d.out_features, x,
            d.in_features, 1.0f, grads + wo, d.in_features);
    if (d.bias)
      be.bias_backward(grads + layout.at(d.path + ".linear.bias").offset, gp, B, d.out_features);
    float* dx = other(g, gp);
    be.gemm(false, false, B, d.in_features, d.out_features, 1.0f, gp, d.out_features,
            params + wo, d.in_features, 0.0f, dx, d.in_features);
    g = dx;
  }
  const std::vector<Pooling> modes = pooling_modes(e.pooling);
  const int32_t* m = a.mask.data();
  for (size_t k = 0; k < modes.size(); ++k)
    be.pool_tokens_backward(dhidden, g + k * H, P, hidden, m, m + size_t(B) * T, B, T, H,
                            modes[k]);
}

}  // namespace bertrt
