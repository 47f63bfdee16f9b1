// The memory options of training on small devices (--freeze-embeddings, --freeze-layers K,
// --recompute), shared by `bertrt pretrain` and `bertrt finetune` (train/trainer.h MemoryOptions).
#pragma once

#include <CLI/CLI.hpp>

#include "train/trainer.h"

namespace bertrt::cli {

// pretraining: the help of --freeze-embeddings names the tied MLM decoder; fine-tuning's says
// that --recompute excludes --qat int8.
void add_memory_flags(CLI::App* cmd, MemoryOptions& m, bool pretraining);
// Fails naming the flag on a negative --freeze-layers (the Trainer checks the upper bound
// against the model's layers).
void check_memory_options(const MemoryOptions& m);

}  // namespace bertrt::cli
