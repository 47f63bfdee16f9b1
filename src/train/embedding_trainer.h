// Contrastive fine-tuning of a sentence-embedding model (sentence-transformers' fit with the
// losses of train/embedding_loss.h): the data, one step's forward and backward, and the loop.
// Every text of a batch runs through the encoder as one padded batch; the embedding head
// (pooling, Dense, Normalize) and the loss run as ops on the same backend (heads/
// embedding_head_ops.h, embedding_loss.h), and ∂loss/∂last_hidden_state goes back through the
// encoder (BertModel::backward_from_hidden).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "heads/embedding_config.h"
#include "heads/embedding_head_ops.h"
#include "tasks/task_definition.h"
#include "tokenizer/tokenizer.h"
#include "train/embedding_loss.h"
#include "train/trainer.h"

namespace bertrt {

// One training row: (anchor, positive[, negative...]) or (sentence1, sentence2) with a score.
struct PairRow {
  std::vector<std::string> texts;
  double score = 0;
};

struct PairData {
  std::vector<PairRow> rows;
  bool scored = false;  // rows carry scores (cosent, cosine)
};

struct PairFileOptions {
  // Scores are mapped from [lo, hi] to [0, 1]; a score outside is an error naming the line.
  // Unset (lo = hi): [0, 5] for a GLUE STS-B file, else [0, 1].
  double score_lo = 0, score_hi = 0;
  ArticleRange articles;  // SQuAD: which articles
};

// A TSV whose header names the columns: anchor, positive and any number of negative columns
// ("negative", "negative_1", ...), or sentence1, sentence2 and optionally score (GLUE STS-B as it
// is); or SQuAD JSON, read as (question, its paragraph) pairs. Throws bertrt::Error naming the
// file and line: unknown layout, a short line, a score that is not a number or outside the range,
// fewer than two rows.
PairData read_pair_file(const std::string& path, const PairFileOptions& options = {});

// The column-major list of a batch's texts: column k of row i is entry k·N + i. Throws
// bertrt::Error when rows differ in their number of texts.
std::vector<std::string> texts_by_column(const std::vector<PairRow>& rows);

// A batch of texts through the encoder and the embedding head (a training step's forward).
struct TrainingEmbeddings {
  int B = 0, T = 0;
  std::vector<float> embeddings;  // [B, D], the head's output, on the host
  // keep_activations: the head's activations (on the backend) that embeddings_backward uses; the
  // encoder's are the model's own, until its next forward.
  EmbeddingHeadActs acts;
  bool kept = false;
};

// Embeds `texts` as one batch padded to its longest, as a training step sees them (the model's
// current dropout, model.set_dropout, applies). keep_activations: a training forward whose
// activations embeddings_backward uses; without, an inference forward keeps none (a training one
// when dropout is on, for its masks, still with nothing kept here).
TrainingEmbeddings embed_for_training(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                      const std::vector<std::string>& texts,
                                      bool keep_activations);

// After embed_for_training(…, keep_activations = true) as the model's last forward: ∂loss/∂
// embeddings [B, D] back through the head and the encoder (backward_from_hidden), added to
// model.grads(be). `e` is the backward's scratch.
void embeddings_backward(BertModel& model, Backend& be, TrainingEmbeddings& e,
                         const std::vector<float>& dembeddings);

// One step's work: forward of every text of `rows`, the loss on the embedding head's outputs,
// and the backward into model.grads(be) (the Dense weights' by the head's backward, the encoder's
// through backward_from_hidden), all on `be`. Returns the loss.
double embedding_forward_backward(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                  const EmbeddingLoss& loss, const std::vector<PairRow>& rows);

struct EmbeddingStepLog {
  int64_t step = 0, total_steps = 0, epoch = 0;
  StepResult result;
  double elapsed_seconds = 0;
};

// The loop of finetune_embeddings with another step (train/reranker_trainer.h): `step` runs one
// batch's forwards and backwards and returns its loss.
void finetune_pair_rows(Trainer& trainer, const PairData& train, int batch_size,
                        int64_t total_steps, uint64_t seed,
                        const std::function<double(const std::vector<PairRow>&)>& step,
                        const std::function<void(const EmbeddingStepLog&)>& on_step);

// Shuffles the rows each epoch with `seed` and runs batches of `batch_size` rows (the last,
// partial one too) until trainer.steps_done() == total_steps; on_step after each update.
void finetune_embeddings(Trainer& trainer, BertModel& model, const Tokenizer& tokenizer,
                         Backend& be, const EmbeddingLoss& loss, const PairData& train,
                         int batch_size, int64_t total_steps, uint64_t seed,
                         const std::function<void(const EmbeddingStepLog&)>& on_step);

}  // namespace bertrt
