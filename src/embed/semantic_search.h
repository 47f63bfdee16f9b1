// Exact semantic search over embeddings, as sentence-transformers' util.semantic_search: the
// inner product of each query with every corpus embedding (one GEMM on the given backend; cosine
// similarity for normalized embeddings), then the k best by partial sort. The one implementation
// behind `bertrt search`.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/backend.h"

namespace bertrt {

struct SearchHit {
  size_t index;  // the corpus row
  float score;   // its inner product with the query
};

// The k best hits of each query, best first; equal scores in corpus order. queries [nq, dim],
// corpus [n, dim], row-major host memory (`be` must accept host pointers: the cpu and reference
// backends). Scores are computed for at most `block` queries at a time (memory: block × n
// floats). Throws bertrt::Error when n exceeds the GEMM's int range or `be` cannot take host
// pointers.
std::vector<std::vector<SearchHit>> semantic_search(Backend& be, const float* queries, size_t nq,
                                                    const float* corpus, size_t n, int dim,
                                                    size_t k, size_t block = 64);

// The k best of scores[0, n), best first; equal scores in index order.
std::vector<SearchHit> top_k_hits(const float* scores, size_t n, size_t k);

}  // namespace bertrt
