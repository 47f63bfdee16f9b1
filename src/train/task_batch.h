// Batches for every fine-tuning family, padded to their longest feature ("dynamic padding"): GLUE
// sentences average ~25 pieces, so padding to max_seq_length would waste most of the compute.
// Padding positions get [PAD], token type 0, attention mask 0 and (token classification) label
// kIgnoreLabel, so they change neither outputs nor loss.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/bert_model.h"
#include "tasks/ner_features.h"
#include "tasks/squad_features.h"
#include "tasks/tsv_task.h"
#include "tokenizer/tokenizer.h"

namespace bertrt {

// A sentence (pair) encoded once: [CLS] A [SEP] (B [SEP]), truncated to max_seq_length, unpadded.
struct EncodedExample {
  std::vector<int32_t> input_ids, token_type_ids;
  int32_t label = -1;  // classification: label id; -1 for regression
  float target = 0;    // regression
};

std::vector<EncodedExample> encode_examples(const Tokenizer& tokenizer,
                                            const std::vector<TextExample>& examples,
                                            int max_seq_length);

// B examples of one family, padded to T = the longest of them. Only the targets of the family
// are filled; targets() points at them (null elsewhere).
struct TaskBatch {
  int B = 0, T = 0;
  std::vector<int32_t> input_ids, token_type_ids, attention_mask;  // [B*T]
  std::vector<int32_t> labels;                           // [B] sequence classification
  std::vector<float> scores;                             // [B] regression
  std::vector<int32_t> token_labels;                     // [B*T] token classification, −100 padded
  std::vector<int32_t> start_positions, end_positions;   // [B] question answering

  EncoderInputs inputs() const {
    return {B, T, input_ids.data(), token_type_ids.data(), attention_mask.data()};
  }
  Targets targets() const;
  int64_t real_tokens() const;  // Σ attention_mask
};

// items[order[begin .. begin+B)], B = min(batch_size, order.size() − begin). `regression` fills
// scores instead of labels.
TaskBatch make_sequence_batch(const std::vector<EncodedExample>& items,
                              const std::vector<size_t>& order, size_t begin, int batch_size,
                              int32_t pad_id, bool regression);
TaskBatch make_ner_batch(const std::vector<NerFeature>& items, const std::vector<size_t>& order,
                         size_t begin, int batch_size, int32_t pad_id);
TaskBatch make_squad_batch(const std::vector<SquadFeature>& items, const std::vector<size_t>& order,
                           size_t begin, int batch_size, int32_t pad_id);

}  // namespace bertrt
