// Sequence(-pair) classification fine-tuning (paper §4.1) and evaluation. Batches are padded to
// their longest example ("dynamic padding"): SST-2 sentences average ~25 tokens, so padding to
// max_seq_length would waste most of the compute.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tasks/tsv_task.h"
#include "train/trainer.h"

namespace bertrt {

// An example encoded once: [CLS] A [SEP] (B [SEP]), truncated to max_seq_length, unpadded.
struct EncodedExample {
  std::vector<int32_t> input_ids, token_type_ids;
  int32_t label = -1;
};

std::vector<EncodedExample> encode_examples(const Tokenizer& tokenizer,
                                            const std::vector<TextExample>& examples,
                                            int max_seq_length);

struct ClassificationBatch {
  int B = 0, T = 0;
  std::vector<int32_t> input_ids, token_type_ids, attention_mask, labels;  // [B*T] ×3, [B]
  EncoderInputs inputs() const {
    return {B, T, input_ids.data(), token_type_ids.data(), attention_mask.data()};
  }
};

// examples[order[begin .. begin+B)] padded with pad_id to the longest of them.
ClassificationBatch make_classification_batch(const std::vector<EncodedExample>& examples,
                                              const std::vector<size_t>& order, size_t begin,
                                              int batch_size, int32_t pad_id);

struct ClassificationEval {
  double loss = 0, accuracy = 0;
  int64_t examples = 0;
  std::vector<int> predictions;                  // argmax per example
  std::vector<std::vector<float>> probabilities;  // softmax per example
};

ClassificationEval evaluate_classification(BertModel& model, Backend& be,
                                           const std::vector<EncodedExample>& examples,
                                           int batch_size, int32_t pad_id);

struct FinetuneStepLog {
  int64_t step = 0, total_steps = 0, epoch = 0;
  StepResult result;
  double tokens_per_second = 0, elapsed_seconds = 0;
};

// Shuffles each epoch with `seed` and runs full and last-partial batches until total_steps.
void finetune(Trainer& trainer, const std::vector<EncodedExample>& train, int batch_size,
              int64_t total_steps, uint64_t seed, int32_t pad_id,
              const std::function<void(const FinetuneStepLog&)>& on_step);

}  // namespace bertrt
