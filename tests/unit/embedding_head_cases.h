// The sentence-embedding head and its losses run end to end through a Backend
// (heads/embedding_head_ops.h, train/embedding_loss.h) and through the host's scalar statement
// of the same math (heads/pooling.h, heads/embedding_head.h, the double-precision
// embedding_loss): shared by embedding_head_ops_test (reference, cpu, checked) and
// vulkan_embedding_ops_test.
#pragma once

#include <string>
#include <vector>

#include "backends/device_array.h"
#include "embedding_op_cases.h"
#include "heads/embedding_head.h"
#include "heads/embedding_head_ops.h"
#include "heads/pooling.h"
#include "train/embedding_loss.h"

namespace bertrt::test {

// Two pooling modes, a Tanh Dense, a GELU Dense and Normalize; 2·8 texts of up to 9 tokens,
// H = 12 (pooled 24 → 10 → 6).
struct HeadCase {
  EmbeddingConfig e;
  ParamLayout layout;
  std::vector<float> params;
  PoolInputs in;
  int H = 12;
};

inline HeadCase head_case(bool include_prompt) {
  HeadCase c;
  c.e.pooling.cls_token = c.e.pooling.mean_tokens = true;
  c.e.pooling.include_prompt = include_prompt;
  c.e.dense.push_back({"2_Dense", 24, 10, true, "torch.nn.modules.activation.Tanh"});
  c.e.dense.push_back({"3_Dense", 10, 6, false, "torch.nn.modules.activation.GELU"});
  c.e.normalize = true;
  c.layout = ParamLayout({{"2_Dense.linear.weight", {10, 24}}, {"2_Dense.linear.bias", {10}},
                          {"3_Dense.linear.weight", {6, 10}}});
  c.params = randn(c.layout.total(), 500, 0.3f);
  c.in = pool_inputs(16, 9, c.H, 501);
  for (int b = 0; b < 16; ++b)  // every text has a token to pool (an empty one has a zero norm)
    if (c.in.mask[size_t(b) * 9] == 0 || c.in.prompt[size_t(b)] > 0) {
      c.in.mask[size_t(b) * 9] = c.in.mask[size_t(b) * 9 + 1] = 1;
      c.in.prompt[size_t(b)] = std::min(c.in.prompt[size_t(b)], 1);
    }
  return c;
}

struct HeadRun {
  double loss = 0;
  std::vector<float> emb, grads, dhidden;
};

// The head, the loss over K = 2 columns of N = 8 and the backward on `be`.
inline HeadRun run_head(Backend& be, const HeadCase& c, const EmbeddingLoss& L,
                        const std::vector<double>& labels) {
  const int B = c.in.B, T = c.in.T, H = c.H, D = c.e.dim(H);
  DeviceArray<float> params, hidden, de, grads, dhidden;
  float* p = to_backend(be, params, c.params);
  const float* h = to_backend(be, hidden, c.in.hidden);
  EmbeddingHeadActs acts;
  const float* emb = embedding_head_forward(be, c.e, c.layout, p, h, c.in.mask.data(),
                                            c.in.prompt.data(), B, T, H, acts);
  HeadRun r;
  r.emb = read_back(be, emb, size_t(B) * D);
  float* d = to_backend(be, de, std::vector<float>(size_t(B) * D, 0.0f));
  r.loss = embedding_loss(be, L, emb, 2, B / 2, D, labels, d);
  float* g = to_backend(be, grads, std::vector<float>(c.params.size(), 0.0f));
  float* dh = to_backend(be, dhidden, std::vector<float>(c.in.hidden.size(), 0.0f));
  embedding_head_backward(be, c.e, c.layout, p, g, h, acts, d, H, dh);
  r.grads = read_back(be, static_cast<const float*>(g), c.params.size());
  r.dhidden = read_back(be, static_cast<const float*>(dh), c.in.hidden.size());
  return r;
}

// The same on the host: pooling.h, embedding_head.h and the double-precision loss.
inline HeadRun run_head_on_host(const HeadCase& c, const EmbeddingLoss& L,
                                const std::vector<double>& labels) {
  const int B = c.in.B, T = c.in.T, H = c.H, D = c.e.dim(H), N = B / 2;
  std::vector<float> pooled(size_t(B) * c.e.pooled_dim(H));
  pooling_forward(c.e.pooling, c.in.hidden.data(), c.in.mask.data(), c.in.prompt.data(), B, T, H,
                  pooled.data());
  DenseActs acts;
  const std::vector<float> x = dense_forward(c.e, c.layout, c.params.data(), pooled.data(), B, H,
                                             &acts);
  HeadRun r;
  r.emb = l2_normalize(x, B, D);
  std::vector<std::vector<float>> cols = {
      std::vector<float>(r.emb.begin(), r.emb.begin() + size_t(N) * D),
      std::vector<float>(r.emb.begin() + size_t(N) * D, r.emb.end())};
  std::vector<std::vector<float>> dcols;
  r.loss = embedding_loss(L, cols, N, D, labels, dcols);
  std::vector<float> de(dcols[0]);
  de.insert(de.end(), dcols[1].begin(), dcols[1].end());
  r.grads.assign(c.params.size(), 0.0f);
  const std::vector<float> dpooled = dense_backward(c.e, c.layout, c.params.data(), r.grads.data(),
                                                    acts, l2_normalize_backward(x, de, B, D), B, H);
  r.dhidden.assign(c.in.hidden.size(), 0.0f);
  pooling_backward(c.e.pooling, dpooled.data(), c.in.hidden.data(), c.in.mask.data(),
                   c.in.prompt.data(), B, T, H, r.dhidden.data());
  return r;
}

// The losses of the head cases: mnrl (Matryoshka over 6 and 3 with weights), cosine, cosent.
inline std::vector<std::pair<std::string, EmbeddingLoss>> head_losses() {
  EmbeddingLoss mnrl, cosine, cosent;
  mnrl.matryoshka_dims = {6, 3};
  mnrl.matryoshka_weights = {1.0, 0.5};
  cosine.kind = EmbeddingLossKind::kCosine;
  cosent.kind = EmbeddingLossKind::kCosent;
  return {{"mnrl", mnrl}, {"cosine", cosine}, {"cosent", cosent}};
}

inline std::vector<double> head_labels() {
  std::vector<double> l;
  for (int i = 0; i < 8; ++i) l.push_back((i * 3 % 5) / 4.0);
  return l;
}

// Two runs agree to within `rel` of each quantity's scale (its largest magnitude): the
// embeddings, the loss, every Dense gradient and dhidden.
inline ::testing::AssertionResult same_run(const HeadRun& want, const HeadRun& got, double rel) {
  auto scaled = [&](const std::vector<float>& w, const std::vector<float>& g, const char* what) {
    double m = 0;
    for (float v : w) m = std::max(m, double(std::fabs(v)));
    auto r = all_close(w, g, {rel * m});
    if (!r) r << " (" << what << ")";
    return r;
  };
  if (!(std::fabs(want.loss - got.loss) <= rel * (1 + std::fabs(want.loss))))
    return ::testing::AssertionFailure() << "loss " << got.loss << " vs " << want.loss;
  auto r = scaled(want.emb, got.emb, "embeddings");
  if (!r) return r;
  r = scaled(want.grads, got.grads, "Dense gradients");
  if (!r) return r;
  return scaled(want.dhidden, got.dhidden, "dhidden");
}

}  // namespace bertrt::test
