// The MLM + NSP pre-training loop (paper §3.1, Appendix A.2) and its held-out evaluation.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "train/pretraining_data.h"
#include "train/pretraining_stream.h"
#include "train/trainer.h"

namespace bertrt {

struct PretrainEval {
  double mlm_loss = 0, mlm_accuracy = 0, nsp_loss = 0, nsp_accuracy = 0;
  int64_t examples = 0, masked = 0;
};

// Masked-token and next-sentence accuracy/loss of `model` over `examples` (no gradient).
PretrainEval evaluate_pretraining(BertModel& model, Backend& be,
                                  const std::vector<PretrainingExample>& examples, int batch_size,
                                  int seq_len, int32_t pad_id);

struct PretrainStepLog {
  int64_t step = 0, total_steps = 0, epoch = 0;
  StepResult result;
  double tokens_per_second = 0;  // non-padding tokens through forward+backward
  double elapsed_seconds = 0;
};

// Runs `trainer` on `stream` from trainer.steps_done() (0, or a resumed run's step) up to
// `total_steps`, calling on_step after each step (where callers log, evaluate and save). Each
// stream batch of B sequences is one optimizer step; with trainer.options()
// .gradient_accumulation_steps = K it is split into K micro-batches of B/K sequences (B must be a
// multiple of K; throws bertrt::Error otherwise), so the data order does not depend on K.
// on_micro_batch, when set, sees each micro-batch (the whole batch when K = 1) just before the
// step that trains on it: step is that step's 1-based number, micro its 0-based index of K. It
// only reads the batch, so a run with it trains exactly as one without (--dump-instances).
using MicroBatchFn = std::function<void(int64_t step, int micro, int K, const Batch& batch)>;
void pretrain(Trainer& trainer, PretrainingStream& stream, int64_t total_steps,
              const std::function<void(const PretrainStepLog&)>& on_step,
              const MicroBatchFn& on_micro_batch = {});

// The K micro-batches pretrain() trains a stream batch on: `b` itself when K = 1, else K slices of
// B/K sequences. Throws bertrt::Error when B is not a multiple of K.
std::vector<Batch> split_batch(const Batch& b, int K);

// The micro-batches of steps [first_step, last_step] (1-based) exactly as pretrain() would train
// on them from this stream position, without a model: for data statistics and dumps
// (`pretrain --data-only`).
void stream_micro_batches(PretrainingStream& stream, int64_t first_step, int64_t last_step, int K,
                          const MicroBatchFn& on_micro_batch);

// Sequences [begin, begin + count) of `b` as a batch of their own (MLM positions rebased).
// Throws bertrt::Error when the range is outside the batch.
Batch slice_batch(const Batch& b, int begin, int count);

// The EncoderInputs/Targets views of a batch.
EncoderInputs batch_inputs(const Batch& b);
Targets batch_targets(const Batch& b);

}  // namespace bertrt
