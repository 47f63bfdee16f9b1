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

void finetune(Trainer& trainer, const TaskData& train, int batch_size, int64_t total_steps,
              uint64_t seed, const std::function<void(const FinetuneStepLog&)>& on_step,
              bool group_by_length) {
  if (train.size() == 0) fail("fine-tuning: no training rows");
  std::mt19937_64 rng(seed);
  std::vector<size_t> order;
  size_t cursor = 0;
  int64_t epoch = 0;
  // A resumed run (trainer restored at step s): replay the epoch shuffles the first s steps drew
  // and stand where they stopped, so the batches that follow are those of the uninterrupted run.
  // Every epoch has ceil(N / B) steps (the last one partial).
  if (const int64_t done = trainer.steps_done(); done > 0) {
    const int64_t per_epoch = int64_t((train.size() + size_t(batch_size) - 1) / size_t(batch_size));
    const int64_t full = done / per_epoch, within = done % per_epoch;
    for (int64_t e = 0; e < full; ++e) order = epoch_order(train, batch_size, group_by_length, rng);
    epoch = full;
    cursor = order.size();  // at an epoch's end: the loop draws the next order
    if (within > 0) {
      order = epoch_order(train, batch_size, group_by_length, rng);
      cursor = size_t(within) * size_t(batch_size);
      epoch = full + 1;
    }
  }
  StepClock clock;
  while (trainer.steps_done() < total_steps) {
    if (cursor >= order.size()) {
      order = epoch_order(train, batch_size, group_by_length, rng);
      cursor = 0;
      ++epoch;
    }
    const TaskBatch b = train.batch(order, cursor, batch_size);
    cursor += size_t(b.B);
    FinetuneStepLog log;
    log.result = trainer.step(b.inputs(), b.targets());
    log.tokens_per_second = clock.lap(b.real_tokens());
    log.elapsed_seconds = clock.elapsed_seconds();
    log.step = trainer.steps_done();
    log.total_steps = total_steps;
    log.epoch = epoch;
    if (on_step) on_step(log);
  }
}

}  // namespace bertrt
