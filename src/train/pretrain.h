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
void pretrain(Trainer& trainer, PretrainingStream& stream, int64_t total_steps,
              const std::function<void(const PretrainStepLog&)>& on_step);

// Sequences [begin, begin + count) of `b` as a batch of their own (MLM positions rebased).
// Throws bertrt::Error when the range is outside the batch.
Batch slice_batch(const Batch& b, int begin, int count);

// The EncoderInputs/Targets views of a batch.
EncoderInputs batch_inputs(const Batch& b);
Targets batch_targets(const Batch& b);

}  // namespace bertrt
