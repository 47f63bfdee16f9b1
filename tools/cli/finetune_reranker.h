// `bertrt finetune --task reranker`: a cross-encoder fine-tuned as CrossEncoder.fit does with one
// label (train/reranker_trainer.h), for `bertrt rerank`.
#pragma once

#include "finetune_embeddings.h"

namespace bertrt::cli {

// The run's flags are finetune's shared ones (EmbeddingFinetuneRun's fields; max_seq_length 0:
// the tokenizer's model_max_length). Trains, scores --dev before and after (mrr@10, ndcg@10),
// writes -o atomically.
void run_reranker_finetune(const EmbeddingFinetuneRun& run);

}  // namespace bertrt::cli
