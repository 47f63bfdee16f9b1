// `bertrt finetune --task sentence-embedding`: contrastive fine-tuning of an embedding model
// (train/embedding_trainer.h), with its own flags (--loss, --scale, --matryoshka-dims,
// --score-range, --pooling) beside finetune's shared ones.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "io/model_io.h"
#include "lora_flags.h"
#include "qat_flags.h"
#include "train/update_rule.h"

namespace bertrt::cli {

struct EmbeddingFinetuneFlags {
  std::string loss = "mnrl", pooling, score_range, matryoshka_dims;
  float scale = 20.0f;
  int mini_batch_size = 32;  // cached-mnrl
  std::vector<CLI::Option*> options;  // refused with other tasks
  CLI::Option* mini_batch_option = nullptr;  // refused with other losses
};

// Adds the flags above to `c` (group "Sentence embeddings").
void add_embedding_finetune_flags(CLI::App* c, EmbeddingFinetuneFlags& f);

struct EmbeddingFinetuneRun {
  std::string model, resume, train, dev, out, metrics, train_articles, dev_articles;
  int epochs = 1;
  int64_t max_steps = 0;
  int batch_size = 32, eval_batch_size = 64, max_seq_length = 0;  // 0: the head's
  float lr = 2e-5f, warmup_ratio = 0.1f, weight_decay = 0.01f, hidden_dropout = 0.0f,
        attention_dropout = 0.0f;
  uint64_t seed = 42;
  const BackendChoice* backend = nullptr;
  const QatOptions* qat = nullptr;  // --qat int8: fake-quant training, -o the int8 model
  const LoraOptions* lora = nullptr;  // --lora-r R ...: adapters on the frozen base, -o the adapter
};

// The optimizer of a run over `rows` training rows: --max-steps, else --epochs of batches.
OptimOptions pair_run_optim(const EmbeddingFinetuneRun& run, size_t rows);

// Runs the fine-tuning: checks, the data, the steps with a progress bar, the dev metrics (an STS
// TSV: cosine_spearman; SQuAD JSON: retrieval) before and after, and -o written atomically.
// SIGINT/SIGTERM: the step in progress finishes, OUT.resume gets the resumable checkpoint and
// Interrupted is thrown; with run.resume set, the run continues from such a checkpoint.
void run_embedding_finetune(const EmbeddingFinetuneRun& run, const EmbeddingFinetuneFlags& f);

// cmd_finetune.cpp: the metadata key of a checkpoint's run record, and the check that the flags
// of a resumed run are the record's (an error listing the flags that differ).
extern const char* const kFinetuneRunKey;
void check_resumable(const std::string& path, const LoadedModel& m, const nlohmann::json& now);

}  // namespace bertrt::cli
