// The memory options of training on small devices (--freeze-embeddings, --freeze-layers K,
// --recompute), shared by `bertrt pretrain` and `bertrt finetune` (train/trainer.h MemoryOptions).
#pragma once

#include <CLI/CLI.hpp>

#include "train/trainer.h"

namespace bertrt::cli {

void add_memory_flags(CLI::App* cmd, MemoryOptions& m);
// Fails naming the flag on a negative --freeze-layers (the Trainer checks the upper bound
// against the model's layers).
void check_memory_options(const MemoryOptions& m);

}  // namespace bertrt::cli
