#include "train/cached_mnrl.h"

#include <algorithm>

#include "core/error.h"

namespace bertrt {

double cached_mnrl_forward_backward(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                    const EmbeddingLoss& loss, const std::vector<PairRow>& rows,
                                    int mini_batch_size) {
  if (loss.kind != EmbeddingLossKind::kMnrl)
    fail("the cached loss is MultipleNegativesRankingLoss's (cached-mnrl); cosent and cosine "
         "have no cached form");
  if (mini_batch_size < 1) fail("--mini-batch-size {}: expected at least 1", mini_batch_size);
  if (rows.empty() || rows.front().texts.size() < 2) fail("cached-mnrl needs (anchor, positive) rows");
  if (!model.heads().embedding)
    fail("the model has no sentence-embedding head (convert a sentence-transformers folder, or "
         "give --pooling)");
  const int D = model.heads().embedding->dim(model.config().hidden_size);
  const std::vector<std::string> texts = texts_by_column(rows);
  const size_t N = rows.size(), K = texts.size() / N;
  // Mini-batches [begin, end) of the column-major text list, never across columns.
  std::vector<std::pair<size_t, size_t>> chunks;
  for (size_t k = 0; k < K; ++k)
    for (size_t b = 0; b < N; b += size_t(mini_batch_size))
      chunks.emplace_back(k * N + b, k * N + std::min(N, b + size_t(mini_batch_size)));
  // The trainer numbers a step's forwards in the low 16 bits of Dropout::step.
  if (chunks.size() > 0xFFFF)
    fail("cached-mnrl: {} mini-batches in one step; at most 65535 (raise --mini-batch-size)",
         chunks.size());
  const Dropout base = model.dropout();
  auto select = [&](size_t c) {
    Dropout d = base;
    d.step = base.step + c;
    model.set_dropout(d);
    return std::vector<std::string>(texts.begin() + std::ptrdiff_t(chunks[c].first),
                                    texts.begin() + std::ptrdiff_t(chunks[c].second));
  };
  struct RestoreDropout {
    BertModel& m;
    Dropout d;
    ~RestoreDropout() { m.set_dropout(d); }
  } restore{model, base};

  // Pass 1: every embedding, no activations kept.
  std::vector<float> e(texts.size() * size_t(D));
  for (size_t c = 0; c < chunks.size(); ++c) {
    const TrainingEmbeddings t = embed_for_training(model, tokenizer, be, select(c), false);
    std::copy(t.embeddings.begin(), t.embeddings.end(), e.begin() + std::ptrdiff_t(chunks[c].first * D));
  }
  // The loss on the whole batch and its gradient with respect to the embeddings (the cache).
  std::vector<std::vector<float>> cols(K), dcols;
  for (size_t k = 0; k < K; ++k)
    cols[k].assign(e.begin() + std::ptrdiff_t(k * N * D), e.begin() + std::ptrdiff_t((k + 1) * N * D));
  const std::vector<double> labels(N, 0.0);
  const double value = embedding_loss(loss, cols, int(N), D, labels, dcols);
  // Pass 2: each mini-batch again with activations, back-propagating its cached gradient.
  for (size_t c = 0; c < chunks.size(); ++c) {
    TrainingEmbeddings t = embed_for_training(model, tokenizer, be, select(c), true);
    const size_t k = chunks[c].first / N, i0 = chunks[c].first % N, n = chunks[c].second - chunks[c].first;
    std::vector<float> de(dcols[k].begin() + std::ptrdiff_t(i0 * D),
                          dcols[k].begin() + std::ptrdiff_t((i0 + n) * D));
    embeddings_backward(model, be, t, de);
  }
  return value;
}

}  // namespace bertrt
