// The contrastive losses of sentence-transformers, on embeddings computed by the embedding head
// (train/embedding_trainer.h runs the encoder's forward and backward around them). Each returns
// the loss and ∂loss/∂embedding of every input; arithmetic in double.
//   mnrl    MultipleNegativesRankingLoss: (anchor, positive[, negative...]) rows; scores
//           scale · cos(anchor_i, c_j) against every positive and negative of the batch,
//           cross-entropy with target j = i, mean over anchors (in-batch negatives)
//   cosent  CoSENTLoss: (sentence1, sentence2, score) rows; s_i = scale · cos(u_i, v_i),
//           loss = log(1 + Σ_{y_i < y_j} exp(s_i − s_j))
//   cosine  CosineSimilarityLoss: mean over rows of (cos(u_i, v_i) − y_i)²
// Matryoshka (MatryoshkaLoss): the inner loss on the first d dimensions of every embedding, for
// each d, summed with its weight.
#pragma once

#include <string>
#include <vector>

#include "backends/backend.h"

namespace bertrt {

enum class EmbeddingLossKind { kMnrl, kCosent, kCosine };

struct EmbeddingLoss {
  EmbeddingLossKind kind = EmbeddingLossKind::kMnrl;
  double scale = 20.0;  // mnrl and cosent (sentence-transformers' default: 1 / temperature 0.05)
  std::vector<int> matryoshka_dims;       // empty: the full width only
  std::vector<double> matryoshka_weights;  // empty: 1 each
  // mnrl only: > 0 runs its cached form (train/cached_mnrl.h) in forwards of this many texts.
  int mini_batch_size = 0;
  // Texts a row has: mnrl ≥ 2 (anchor, positive, negatives), cosent and cosine 2.
  bool needs_labels() const { return kind != EmbeddingLossKind::kMnrl; }
};

// "mnrl", "cosent", "cosine" → kind; throws bertrt::Error listing the names.
EmbeddingLossKind parse_embedding_loss(const std::string& name);

// cols[k] holds column k's embeddings [N, D] row-major (mnrl: anchors, positives, negatives...;
// cosent, cosine: sentence1, sentence2); labels [N] (cosent, cosine). dcols gets the gradients,
// shaped as cols. Throws bertrt::Error for an inconsistent call (a matryoshka dimension above D,
// fewer than 2 columns).
double embedding_loss(const EmbeddingLoss& loss, const std::vector<std::vector<float>>& cols,
                      int N, int D, const std::vector<double>& labels,
                      std::vector<std::vector<float>>& dcols);

// The same loss as ops on `be` (embedding_loss_ops.cpp), in float: emb [K·N, D] in be's memory
// holds column k's embeddings in rows k·N .. k·N + N − 1; ∂loss/∂emb is ADDED to demb (same shape,
// be's memory). The cosine similarities are a GEMM of normalized rows (mnrl: every anchor against
// every candidate, then scale and cross_entropy against the diagonal; cosine and cosent: each
// pair's dot product, then mse_loss or cosent_loss). Returns the loss (one sync).
double embedding_loss(Backend& be, const EmbeddingLoss& loss, const float* emb, int K, int N,
                      int D, const std::vector<double>& labels, float* demb);

}  // namespace bertrt
