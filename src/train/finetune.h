// The fine-tuning loop of every task family (paper §4): one pre-trained encoder, the task's head
// on top, all weights trained with the BERT recipe (Trainer: AdamW, warm-up + linear decay, clip).
// Data and metrics per family are in train/task_data.h, batches in train/task_batch.h.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "train/task_data.h"
#include "train/trainer.h"

namespace bertrt {

struct FinetuneStepLog {
  int64_t step = 0, total_steps = 0, epoch = 0;
  StepResult result;
  double tokens_per_second = 0, elapsed_seconds = 0;
};

// Shuffles the rows of `train` each epoch with `seed` and runs full and last-partial batches
// until trainer.steps_done() == total_steps; on_step after each update. A trainer restored at
// step s > 0 (restore_training_state) continues with the batch the uninterrupted run would have
// taken at step s + 1.
//
// group_by_length (Hugging Face TrainingArguments.group_by_length, LengthGroupedSampler): after
// the shuffle, each run of 50 batches' worth of rows is sorted by length (longest first), so a
// batch holds rows of similar length and dynamic padding wastes little (SST-2: the longest of 32
// random sentences is ~3× their mean). Batches stay random draws at the scale of 50 batches.
constexpr int kLengthGroupBatches = 50;
//
// FinetuneLoop is the same loop one step at a time (the C API's trainer steps it; finetune() runs
// it to the end), so the CLI and the API take exactly the same batches.
class FinetuneLoop {
 public:
  // Throws bertrt::Error when `train` has no rows. `train` and `trainer` must outlive the loop.
  FinetuneLoop(Trainer& trainer, const TaskData& train, int batch_size, int64_t total_steps,
               uint64_t seed, bool group_by_length = false);
  bool done() const { return trainer_.steps_done() >= total_steps_; }
  // One optimizer step on the next batch (an epoch ends: the next shuffle); call while !done().
  FinetuneStepLog step();
  int64_t epoch() const { return epoch_; }

 private:
  Trainer& trainer_;
  const TaskData& train_;
  int batch_size_;
  int64_t total_steps_;
  bool group_by_length_;
  std::mt19937_64 rng_;
  std::vector<size_t> order_;
  size_t cursor_ = 0;
  int64_t epoch_ = 0;
  StepClock clock_;
};

void finetune(Trainer& trainer, const TaskData& train, int batch_size, int64_t total_steps,
              uint64_t seed, const std::function<void(const FinetuneStepLog&)>& on_step,
              bool group_by_length = false);

// The row order of one epoch: a shuffle, then (group_by_length) each run of
// kLengthGroupBatches · batch_size rows sorted by length, longest first (stable).
std::vector<size_t> epoch_order(const TaskData& train, int batch_size, bool group_by_length,
                                std::mt19937_64& rng);

}  // namespace bertrt
