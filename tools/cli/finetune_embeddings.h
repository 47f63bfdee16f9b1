// `bertrt finetune --task sentence-embedding`: contrastive fine-tuning of an embedding model
// (train/embedding_trainer.h), with its own flags (--loss, --scale, --matryoshka-dims,
// --score-range, --pooling) beside finetune's shared ones.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "qat_flags.h"

namespace bertrt::cli {

struct EmbeddingFinetuneFlags {
  std::string loss = "mnrl", pooling, score_range, matryoshka_dims;
  float scale = 20.0f;
  std::vector<CLI::Option*> options;  // refused with other tasks
};

// Adds the flags above to `c` (group "Sentence embeddings").
void add_embedding_finetune_flags(CLI::App* c, EmbeddingFinetuneFlags& f);

struct EmbeddingFinetuneRun {
  std::string model, train, dev, out, metrics, train_articles, dev_articles;
  int epochs = 1;
  int64_t max_steps = 0;
  int batch_size = 32, eval_batch_size = 64;
  float lr = 2e-5f, warmup_ratio = 0.1f, weight_decay = 0.01f;
  uint64_t seed = 42;
  const BackendChoice* backend = nullptr;
  const QatOptions* qat = nullptr;  // --qat int8: fake-quant training, -o the int8 model
};

// Runs the fine-tuning: checks, the data, the steps with a progress bar, the dev metrics (an STS
// TSV: cosine_spearman; SQuAD JSON: retrieval) before and after, and -o written atomically.
void run_embedding_finetune(const EmbeddingFinetuneRun& run, const EmbeddingFinetuneFlags& f);

}  // namespace bertrt::cli
