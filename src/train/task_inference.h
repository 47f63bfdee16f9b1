// Forward passes of a fine-tuned model over encoded features without training: the raw outputs of
// each family's head per feature (what eval turns into metrics and predict into answers), plus the
// loss when the features carry targets. Features run in batches of similar length (sorted, so
// little padding); outputs come back in the input order.
#pragma once

#include <cstdint>
#include <vector>

#include "model/bert_model.h"
#include "train/task_batch.h"

namespace bertrt {

struct HeadLoss {
  double sum = 0;     // Σ batch loss · batch count
  int64_t count = 0;  // rows that entered the loss (examples, labelled tokens, windows)
  double mean() const { return count ? sum / double(count) : 0; }
};

// Per example: K logits (classification) or the score (regression, one value).
struct SequenceOutputs {
  std::vector<std::vector<float>> rows;
  HeadLoss loss;
};
// with_targets=false runs the head without a loss (prediction input has no labels).
SequenceOutputs run_sequences(BertModel& model, Backend& be, const std::vector<EncodedExample>& items,
                              int batch_size, int32_t pad_id, bool with_targets);

// Per feature f: row-major [T_f, K] token logits (T_f = its input_ids.size()), the shape
// ner_word_predictions takes.
struct TokenOutputs {
  std::vector<std::vector<float>> logits;
  HeadLoss loss;
};
TokenOutputs run_tokens(BertModel& model, Backend& be, const std::vector<NerFeature>& items,
                        int batch_size, int32_t pad_id);

// Per feature f: T_f start and T_f end logits, the shape postprocess_squad takes.
struct SpanOutputs {
  std::vector<std::vector<float>> start, end;
  HeadLoss loss;
};
SpanOutputs run_spans(BertModel& model, Backend& be, const std::vector<SquadFeature>& items,
                      int batch_size, int32_t pad_id, bool with_targets);

// Softmax of one row of logits (max subtracted, double sums).
std::vector<float> softmax(const std::vector<float>& logits);
int argmax(const std::vector<float>& row);  // ties: the lower index

}  // namespace bertrt
