#include "embed/semantic_search.h"

#include <algorithm>
#include <climits>
#include <numeric>

#include "core/error.h"

namespace bertrt {

std::vector<SearchHit> top_k_hits(const float* scores, size_t n, size_t k) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  auto better = [&](size_t a, size_t b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  };
  k = std::min(k, n);
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(), better);
  std::vector<SearchHit> hits;
  hits.reserve(k);
  for (size_t i = 0; i < k; ++i) hits.push_back({order[i], scores[order[i]]});
  return hits;
}

std::vector<std::vector<SearchHit>> semantic_search(Backend& be, const float* queries, size_t nq,
                                                    const float* corpus, size_t n, int dim,
                                                    size_t k, size_t block) {
  if (n > size_t(INT_MAX) || dim < 1)
    fail("semantic_search: a corpus of {} embeddings of {} dimensions is outside the GEMM's range",
         n, dim);
  if (!be.accepts_host_pointers())
    fail("semantic_search: the {} backend does not take host memory; search on the cpu backend",
         be.name());
  block = std::max<size_t>(1, std::min(block, nq));
  std::vector<std::vector<SearchHit>> out;
  out.reserve(nq);
  std::vector<float> scores(block * n);
  for (size_t q0 = 0; q0 < nq; q0 += block) {
    const size_t m = std::min(block, nq - q0);
    if (n > 0)
      be.gemm(false, true, int(m), int(n), dim, 1.0f, queries + q0 * size_t(dim), dim, corpus, dim,
              0.0f, scores.data(), int(n));
    be.sync();
    for (size_t i = 0; i < m; ++i) out.push_back(top_k_hits(scores.data() + i * n, n, k));
  }
  return out;
}

}  // namespace bertrt
