// Exact search (embed/semantic_search.h): the k best by inner product, best first, ties in corpus
// order, the same hits whatever the query block, against a double-precision scan of the same
// vectors.
#include <gtest/gtest.h>

#include <random>

#include "backends/backend.h"
#include "core/error.h"
#include "embed/semantic_search.h"

namespace bertrt {
namespace {

TEST(SemanticSearch, TopKIsBestFirstWithTiesInCorpusOrder) {
  const float s[] = {0.5f, 0.9f, 0.5f, -1.f, 0.9f};
  const std::vector<SearchHit> h = top_k_hits(s, 5, 4);
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].index, 1u);
  EXPECT_EQ(h[1].index, 4u);
  EXPECT_EQ(h[2].index, 0u);
  EXPECT_EQ(h[3].index, 2u);
  EXPECT_EQ(top_k_hits(s, 5, 10).size(), 5u);  // k above the corpus: all of it
}

TEST(SemanticSearch, MatchesAScanWhateverTheBlock) {
  // 37 × 19 corpus, 5 queries: odd sizes; integer-valued floats, so every inner product is exact
  // in float32 and the scan's double sums give the same order.
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> v(-4, 4);
  const int n = 37, dim = 19, nq = 5, k = 6;
  std::vector<float> c(n * dim), q(nq * dim);
  for (float& x : c) x = float(v(rng));
  for (float& x : q) x = float(v(rng));
  for (const char* name : {"cpu", "reference"}) {
    auto be = make_backend(name);
    for (size_t block : {size_t(1), size_t(2), size_t(64)}) {
      const auto hits = semantic_search(*be, q.data(), nq, c.data(), n, dim, k, block);
      ASSERT_EQ(hits.size(), size_t(nq));
      for (int i = 0; i < nq; ++i) {
        std::vector<float> s(n);
        for (int j = 0; j < n; ++j) {
          double d = 0;
          for (int e = 0; e < dim; ++e) d += double(q[i * dim + e]) * c[j * dim + e];
          s[j] = float(d);
        }
        const auto want = top_k_hits(s.data(), n, k);
        ASSERT_EQ(hits[i].size(), want.size());
        for (int r = 0; r < k; ++r) {
          EXPECT_EQ(hits[i][r].index, want[r].index) << name << " block " << block;
          EXPECT_EQ(hits[i][r].score, want[r].score);
        }
      }
    }
  }
}

}  // namespace
}  // namespace bertrt
