#include "train/finetune.h"

#include <numeric>
#include <random>

#include "core/error.h"
#include "core/random.h"

namespace bertrt {

void finetune(Trainer& trainer, const TaskData& train, int batch_size, int64_t total_steps,
              uint64_t seed, const std::function<void(const FinetuneStepLog&)>& on_step) {
  if (train.size() == 0) fail("fine-tuning: no training rows");
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  size_t cursor = order.size();
  int64_t epoch = 0;
  StepClock clock;
  while (trainer.steps_done() < total_steps) {
    if (cursor >= order.size()) {
      random_shuffle(order, rng);
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
