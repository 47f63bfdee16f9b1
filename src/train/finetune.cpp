#include "train/finetune.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "core/error.h"
#include "core/random.h"

namespace bertrt {

std::vector<size_t> epoch_order(const TaskData& train, int batch_size, bool group_by_length,
                                std::mt19937_64& rng) {
  std::vector<size_t> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  random_shuffle(order, rng);
  if (!group_by_length) return order;
  const size_t group = size_t(kLengthGroupBatches) * size_t(batch_size);
  for (size_t begin = 0; begin < order.size(); begin += group) {
    const auto end = order.begin() + std::min(order.size(), begin + group);
    std::stable_sort(order.begin() + begin, end,
                     [&](size_t a, size_t b) { return train.length(a) > train.length(b); });
  }
  return order;
}

FinetuneLoop::FinetuneLoop(Trainer& trainer, const TaskData& train, int batch_size,
                           int64_t total_steps, uint64_t seed, bool group_by_length)
    : trainer_(trainer),
      train_(train),
      batch_size_(batch_size),
      total_steps_(total_steps),
      group_by_length_(group_by_length),
      rng_(seed) {
  if (train.size() == 0) fail("fine-tuning: no training rows");
  if (batch_size < 1) fail("fine-tuning: batch size must be >= 1, got {}", batch_size);
  // A resumed run (trainer restored at step s): replay the epoch shuffles the first s steps drew
  // and stand where they stopped, so the batches that follow are those of the uninterrupted run.
  // Every epoch has ceil(N / B) steps (the last one partial).
  if (const int64_t done = trainer.steps_done(); done > 0) {
    const int64_t per_epoch = int64_t((train.size() + size_t(batch_size) - 1) / size_t(batch_size));
    const int64_t full = done / per_epoch, within = done % per_epoch;
    for (int64_t e = 0; e < full; ++e)
      order_ = epoch_order(train, batch_size, group_by_length, rng_);
    epoch_ = full;
    cursor_ = order_.size();  // at an epoch's end: the loop draws the next order
    if (within > 0) {
      order_ = epoch_order(train, batch_size, group_by_length, rng_);
      cursor_ = size_t(within) * size_t(batch_size);
      epoch_ = full + 1;
    }
  }
}

FinetuneStepLog FinetuneLoop::step() {
  if (cursor_ >= order_.size()) {
    order_ = epoch_order(train_, batch_size_, group_by_length_, rng_);
    cursor_ = 0;
    ++epoch_;
  }
  const TaskBatch b = train_.batch(order_, cursor_, batch_size_);
  cursor_ += size_t(b.B);
  FinetuneStepLog log;
  log.result = trainer_.step(b.inputs(), b.targets());
  log.tokens_per_second = clock_.lap(b.real_tokens());
  log.elapsed_seconds = clock_.elapsed_seconds();
  log.step = trainer_.steps_done();
  log.total_steps = total_steps_;
  log.epoch = epoch_;
  return log;
}

void finetune(Trainer& trainer, const TaskData& train, int batch_size, int64_t total_steps,
              uint64_t seed, const std::function<void(const FinetuneStepLog&)>& on_step,
              bool group_by_length) {
  FinetuneLoop loop(trainer, train, batch_size, total_steps, seed, group_by_length);
  while (!loop.done()) {
    const FinetuneStepLog log = loop.step();
    if (on_step) on_step(log);
  }
}

}  // namespace bertrt
