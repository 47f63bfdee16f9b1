// The fine-tuning loop of every task family (paper §4): one pre-trained encoder, the task's head
// on top, all weights trained with the BERT recipe (Trainer: AdamW, warm-up + linear decay, clip).
// Data and metrics per family are in train/task_data.h, batches in train/task_batch.h.
#pragma once

#include <cstdint>
#include <functional>

#include "train/task_data.h"
#include "train/trainer.h"

namespace bertrt {

struct FinetuneStepLog {
  int64_t step = 0, total_steps = 0, epoch = 0;
  StepResult result;
  double tokens_per_second = 0, elapsed_seconds = 0;
};

// Shuffles the rows of `train` each epoch with `seed` and runs full and last-partial batches
// until trainer.steps_done() == total_steps; on_step after each update.
void finetune(Trainer& trainer, const TaskData& train, int batch_size, int64_t total_steps,
              uint64_t seed, const std::function<void(const FinetuneStepLog&)>& on_step);

}  // namespace bertrt
