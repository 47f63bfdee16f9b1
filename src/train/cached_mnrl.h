// CachedMultipleNegativesRankingLoss (sentence-transformers; GradCache, Gao et al. 2021): the
// in-batch-negatives loss of a large batch in the memory of a mini-batch. Every text is embedded
// in mini-batches keeping no activations; the loss and its gradient with respect to the
// embeddings are computed on the whole batch; then each mini-batch is embedded again, with
// activations, and its slice of the cached embedding gradient goes back through the head and the
// encoder. The update is MultipleNegativesRankingLoss's on the same batch (up to float rounding:
// a mini-batch is padded to its own longest text, the whole batch's forward to the batch's).
#pragma once

#include <vector>

#include "train/embedding_trainer.h"

namespace bertrt {

// One step's forward and backward of `loss` (mnrl, Matryoshka dimensions included) over `rows`
// in mini-batches of at most `mini_batch_size` texts of one column, as upstream splits each
// column. Dropout: mini-batch j draws the masks of Dropout::step + j in both passes, so the
// re-embedding sees the masks the cached gradient was computed with (upstream's RandContext
// replays its RNG state for the same reason). Returns the loss; gradients are added to
// model.grads(be). Throws bertrt::Error for a loss other than mnrl, mini_batch_size < 1, or rows
// without a positive.
double cached_mnrl_forward_backward(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                    const EmbeddingLoss& loss, const std::vector<PairRow>& rows,
                                    int mini_batch_size);

}  // namespace bertrt
