#include "train/embedding_loss.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace bertrt {

namespace {

using Mat = std::vector<double>;  // row-major [rows, D]

// Rows divided by max(‖row‖, 1e-12) (F.normalize), with their norms for the backward.
Mat normalize(const Mat& x, int rows, int D, std::vector<double>& norms) {
  Mat y(x.size());
  norms.assign(size_t(rows), 0.0);
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int i = 0; i < D; ++i) ss += x[size_t(r) * D + i] * x[size_t(r) * D + i];
    norms[size_t(r)] = std::sqrt(ss);
    const double n = std::max(norms[size_t(r)], 1e-12);
    for (int i = 0; i < D; ++i) y[size_t(r) * D + i] = x[size_t(r) * D + i] / n;
  }
  return y;
}

// ∂/∂x of the normalization, given its output y, the norms and dy.
Mat normalize_backward(const Mat& y, const std::vector<double>& norms, const Mat& dy, int rows,
                       int D) {
  Mat dx(dy.size());
  for (int r = 0; r < rows; ++r) {
    const double* yr = &y[size_t(r) * D];
    const double* g = &dy[size_t(r) * D];
    double* o = &dx[size_t(r) * D];
    if (norms[size_t(r)] <= 1e-12) {
      for (int i = 0; i < D; ++i) o[i] = g[i] / 1e-12;
      continue;
    }
    double yg = 0;
    for (int i = 0; i < D; ++i) yg += yr[i] * g[i];
    for (int i = 0; i < D; ++i) o[i] = (g[i] - yr[i] * yg) / norms[size_t(r)];
  }
  return dx;
}

double dot(const double* a, const double* b, int D) {
  double s = 0;
  for (int i = 0; i < D; ++i) s += a[i] * b[i];
  return s;
}

// One loss at width D on `cols` (each [N, D], already cut to D); gradients into dcols.
double loss_at(const EmbeddingLoss& L, const std::vector<Mat>& cols, int N, int D,
               const std::vector<double>& labels, std::vector<Mat>& dcols) {
  const size_t K = cols.size();
  std::vector<std::vector<double>> norms(K);
  std::vector<Mat> unit(K), dunit(K);
  for (size_t k = 0; k < K; ++k) {
    unit[k] = normalize(cols[k], N, D, norms[k]);
    dunit[k].assign(cols[k].size(), 0.0);
  }
  double loss = 0;
  if (L.kind == EmbeddingLossKind::kMnrl) {
    // Candidates: every positive, then every negative column, as torch.cat(embeddings[1:]).
    const int M = int(K - 1) * N;
    std::vector<double> s(static_cast<size_t>(M));
    for (int i = 0; i < N; ++i) {
      const double* a = &unit[0][size_t(i) * D];
      double mx = -INFINITY;
      for (int j = 0; j < M; ++j) {
        const Mat& c = unit[1 + size_t(j / N)];
        s[size_t(j)] = L.scale * dot(a, &c[size_t(j % N) * D], D);
        mx = std::max(mx, s[size_t(j)]);
      }
      double sum = 0;
      for (int j = 0; j < M; ++j) sum += std::exp(s[size_t(j)] - mx);
      loss += (mx + std::log(sum) - s[size_t(i)]) / N;
      for (int j = 0; j < M; ++j) {
        const double ds = (std::exp(s[size_t(j)] - mx) / sum - (j == i ? 1.0 : 0.0)) / N;
        const size_t ck = 1 + size_t(j / N), row = size_t(j % N);
        const double* c = &unit[ck][row * D];
        double* dc = &dunit[ck][row * D];
        double* da = &dunit[0][size_t(i) * D];
        for (int d = 0; d < D; ++d) {
          da[d] += L.scale * ds * c[d];
          dc[d] += L.scale * ds * a[d];
        }
      }
    }
  } else {
    std::vector<double> cos(static_cast<size_t>(N)), dcos(static_cast<size_t>(N), 0.0);
    for (int i = 0; i < N; ++i)
      cos[size_t(i)] = dot(&unit[0][size_t(i) * D], &unit[1][size_t(i) * D], D);
    if (L.kind == EmbeddingLossKind::kCosine) {
      for (int i = 0; i < N; ++i) {
        const double e = cos[size_t(i)] - labels[size_t(i)];
        loss += e * e / N;
        dcos[size_t(i)] = 2 * e / N;
      }
    } else {  // CoSENT: logsumexp over 0 and every s_i − s_j with y_i < y_j
      double mx = 0;
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j)
          if (labels[size_t(i)] < labels[size_t(j)])
            mx = std::max(mx, L.scale * (cos[size_t(i)] - cos[size_t(j)]));
      double sum = std::exp(-mx);
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j)
          if (labels[size_t(i)] < labels[size_t(j)])
            sum += std::exp(L.scale * (cos[size_t(i)] - cos[size_t(j)]) - mx);
      loss = mx + std::log(sum);
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j)
          if (labels[size_t(i)] < labels[size_t(j)]) {
            const double p = std::exp(L.scale * (cos[size_t(i)] - cos[size_t(j)]) - mx) / sum;
            dcos[size_t(i)] += L.scale * p;
            dcos[size_t(j)] -= L.scale * p;
          }
    }
    for (int i = 0; i < N; ++i)
      for (int d = 0; d < D; ++d) {
        dunit[0][size_t(i) * D + d] += dcos[size_t(i)] * unit[1][size_t(i) * D + d];
        dunit[1][size_t(i) * D + d] += dcos[size_t(i)] * unit[0][size_t(i) * D + d];
      }
  }
  dcols.resize(K);
  for (size_t k = 0; k < K; ++k) dcols[k] = normalize_backward(unit[k], norms[k], dunit[k], N, D);
  return loss;
}

}  // namespace

EmbeddingLossKind parse_embedding_loss(const std::string& name) {
  if (name == "mnrl") return EmbeddingLossKind::kMnrl;
  if (name == "cosent") return EmbeddingLossKind::kCosent;
  if (name == "cosine") return EmbeddingLossKind::kCosine;
  fail("--loss '{}' is not one of mnrl, cosent, cosine", name);
}

double embedding_loss(const EmbeddingLoss& L, const std::vector<std::vector<float>>& cols, int N,
                      int D, const std::vector<double>& labels,
                      std::vector<std::vector<float>>& dcols) {
  if (cols.size() < 2) fail("a contrastive loss needs at least two texts a row");
  if (L.kind != EmbeddingLossKind::kMnrl && cols.size() != 2)
    fail("{} takes two texts and a score a row, got {} texts",
         L.kind == EmbeddingLossKind::kCosent ? "cosent" : "cosine", cols.size());
  if (L.needs_labels() && labels.size() != size_t(N)) fail("a score is needed for every row");
  std::vector<int> dims = L.matryoshka_dims;
  if (dims.empty()) dims = {D};
  dcols.assign(cols.size(), std::vector<float>(size_t(N) * D, 0.0f));
  std::vector<double> acc(cols.size() * size_t(N) * D, 0.0);
  double total = 0;
  for (size_t m = 0; m < dims.size(); ++m) {
    const int d = dims[m];
    if (d < 1 || d > D) fail("matryoshka dimension {} is outside [1, {}]", d, D);
    const double w = m < L.matryoshka_weights.size() ? L.matryoshka_weights[m] : 1.0;
    std::vector<Mat> cut(cols.size()), g;
    for (size_t k = 0; k < cols.size(); ++k) {
      cut[k].resize(size_t(N) * d);
      for (int i = 0; i < N; ++i)
        for (int c = 0; c < d; ++c) cut[k][size_t(i) * d + c] = cols[k][size_t(i) * D + c];
    }
    total += w * loss_at(L, cut, N, d, labels, g);
    for (size_t k = 0; k < cols.size(); ++k)
      for (int i = 0; i < N; ++i)
        for (int c = 0; c < d; ++c)
          acc[(k * N + size_t(i)) * D + c] += w * g[k][size_t(i) * d + c];
  }
  for (size_t k = 0; k < cols.size(); ++k)
    for (size_t i = 0; i < size_t(N) * D; ++i) dcols[k][i] = float(acc[k * size_t(N) * D + i]);
  return total;
}

}  // namespace bertrt
