// The contrastive losses of embedding_loss.h as backend ops (see the declaration).
#include <algorithm>
#include <numeric>

#include "backends/device_array.h"
#include "core/error.h"
#include "train/embedding_loss.h"

namespace bertrt {

double embedding_loss(Backend& be, const EmbeddingLoss& L, const float* emb, int K, int N, int D,
                      const std::vector<double>& labels, float* demb) {
  if (K < 2) fail("a contrastive loss needs at least two texts a row");
  if (L.kind != EmbeddingLossKind::kMnrl && K != 2)
    fail("{} takes two texts and a score a row, got {} texts",
         L.kind == EmbeddingLossKind::kCosent ? "cosent" : "cosine", K);
  if (L.needs_labels() && labels.size() != size_t(N)) fail("a score is needed for every row");
  std::vector<int> dims = L.matryoshka_dims;
  if (dims.empty()) dims = {D};
  for (int d : dims)
    if (d < 1 || d > D) fail("matryoshka dimension {} is outside [1, {}]", d, D);
  const int R = K * N, M = (K - 1) * N;  // rows; mnrl's candidates (positives, then negatives)
  const int widest = *std::max_element(dims.begin(), dims.end());
  DeviceArray<float> unit(be, size_t(R) * widest), dunit(be, size_t(R) * widest);
  DeviceArray<double> losses(be, dims.size());
  // mnrl: the scores [N, M] and targets i; cosine, cosent: the pair cosines [N], their
  // gradient [N] and the labels.
  DeviceArray<float> scores, dcos, label;
  DeviceArray<int32_t> targets;
  if (L.kind == EmbeddingLossKind::kMnrl) {
    scores.ensure(be, size_t(N) * M);
    std::vector<int32_t> t(static_cast<size_t>(N));
    std::iota(t.begin(), t.end(), 0);
    be.upload(targets.ensure(be, t.size()), t.data(), t.size() * sizeof(int32_t));
  } else {
    scores.ensure(be, size_t(N));
    dcos.ensure(be, size_t(N));
    const std::vector<float> l(labels.begin(), labels.end());  // float32, as upstream's tensor
    be.upload(label.ensure(be, l.size()), l.data(), l.size() * sizeof(float));
  }
  std::vector<double> weights;
  for (size_t m = 0; m < dims.size(); ++m) {
    const int d = dims[m];
    const float w = m < L.matryoshka_weights.size() ? float(L.matryoshka_weights[m]) : 1.0f;
    weights.push_back(w);
    float *u = unit.data(), *du = dunit.data();
    // Matryoshka: the first d columns of every row, normalized (cosine similarity throughout).
    be.l2_normalize_rows(u, emb, D, R, d);
    be.fill(du, 0.0f, size_t(R) * d);
    const float scale = float(L.scale);
    if (L.kind == EmbeddingLossKind::kMnrl) {
      // scores = scale · anchors · candidatesᵀ; cross_entropy overwrites them with their gradient
      // (w / N: the mean over anchors), which flows back through both factors.
      float* s = scores.data();
      be.gemm(false, true, N, M, d, scale, u, d, u + size_t(N) * d, d, 0.0f, s, M);
      be.cross_entropy(s, losses.data() + m, s, targets.data(), N, M, w / float(N));
      be.gemm(false, false, N, d, M, scale, s, M, u + size_t(N) * d, d, 1.0f, du, d);
      be.gemm(true, false, M, d, N, scale, s, M, u, d, 1.0f, du + size_t(N) * d, d);
    } else {
      // cos_i = u_i · v_i: N one-by-one GEMMs; back: du_i += dcos_i · v_i, dv_i += dcos_i · u_i.
      float *c = scores.data(), *dc = dcos.data();
      const float* v = u + size_t(N) * d;
      be.gemm_batched(N, false, true, 1, 1, d, 1.0f, u, d, d, v, d, d, 0.0f, c, 1, 1);
      if (L.kind == EmbeddingLossKind::kCosine)
        be.mse_loss(dc, losses.data() + m, c, label.data(), N, w);
      else
        be.cosent_loss(dc, losses.data() + m, c, label.data(), N, scale, w);
      be.gemm_batched(N, false, false, 1, d, 1, 1.0f, dc, 1, 1, v, d, d, 1.0f, du, d, d);
      be.gemm_batched(N, false, false, 1, d, 1, 1.0f, dc, 1, 1, u, d, d, 1.0f,
                      du + size_t(N) * d, d, d);
    }
    be.l2_normalize_rows_backward(demb, D, emb, D, du, R, d);
  }
  const std::vector<double> sums = read_back(be, static_cast<const double*>(losses.data()),
                                             dims.size());
  double total = 0;
  for (size_t m = 0; m < dims.size(); ++m)
    // cross_entropy and mse_loss return sums over rows (the mean's numerator); cosent the loss.
    total += weights[m] * (L.kind == EmbeddingLossKind::kCosent ? sums[m] : sums[m] / N);
  return total;
}

}  // namespace bertrt
