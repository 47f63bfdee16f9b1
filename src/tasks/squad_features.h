// SQuAD features and post-processing (BERT paper §4.2; Hugging Face run_squad.py /
// run_qa.py prepare_train_features and postprocess_qa_predictions).
//
// Features: [CLS] question [SEP] context-window [SEP], token types 0 then 1, unpadded. The
// question keeps its first max_query_length pieces. The context is cut into windows of at most
// max_seq_length - len(question) - 3 pieces; each window starts doc_stride pieces after the
// previous one (run_squad.py's meaning of doc_stride: the step between window starts, not the
// overlap as in run_qa.py), the last window ending at the context's end. Each context piece keeps
// the byte range of the original characters it came from (tokenizer/offsets.h), so any span of
// pieces maps back to a faithful substring of the context.
//
// Training targets (first gold answer, as run_qa.py): the first and last piece overlapping the
// answer's bytes when the window holds the whole answer, else both 0 ([CLS]).
//
// Post-processing: per feature, the n_best highest start and n_best highest end logits; a pair
// counts when both pieces are in the context, start ≤ end and end − start + 1 ≤ max_answer_length;
// its score is start logit + end logit; the best pair over all windows of the question wins and
// its answer is context[begin of start piece, end of end piece) — original text, whitespace and
// case kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tasks/squad.h"
#include "tokenizer/tokenizer.h"

namespace bertrt {

struct SquadFeatureOptions {
  int max_seq_length = 384;
  int doc_stride = 128;
  int max_query_length = 64;
};

struct SquadFeature {
  size_t example = 0;  // index into the examples given to make_squad_features
  int window = 0;      // 0, 1, ... within the example
  std::vector<int32_t> input_ids, token_type_ids;  // [T], T ≤ max_seq_length
  // [T]: byte range in the example's context of each context piece; -1 for [CLS], question
  // pieces and [SEP].
  std::vector<int64_t> offset_begin, offset_end;
  int context_begin = 0, context_end = 0;  // the context pieces are positions [begin, end)
  int start_position = 0, end_position = 0;  // training targets (see above); 0 = no answer here
};

struct SquadFeatureStats {
  size_t examples = 0, features = 0;
  size_t truncated_questions = 0;  // questions longer than max_query_length pieces
  size_t answers_outside = 0;      // training features whose window misses the first answer
};

// Throws bertrt::Error when doc_stride or max_query_length < 1, or when max_seq_length leaves no
// room for context after a question (max_seq_length - question pieces - 3 < 1; names the id).
std::vector<SquadFeature> make_squad_features(const Tokenizer& tokenizer,
                                              const std::vector<SquadExample>& examples,
                                              const SquadFeatureOptions& options,
                                              SquadFeatureStats* stats = nullptr);

struct SquadPostprocessOptions {
  int n_best = 20;
  int max_answer_length = 30;  // in pieces
};

struct SquadPrediction {
  std::string text;          // original context substring; empty when no valid span exists
  float score = 0;           // start logit + end logit of the best span
  float probability = 0;     // softmax of the score over the example's n_best best spans
  int64_t byte_begin = -1, byte_end = -1;  // [begin, end) in the context
};

// One prediction per example. start_logits[f] and end_logits[f] hold T_f values for features[f]
// (T_f = its input_ids.size()). Throws bertrt::Error when the sizes disagree.
std::vector<SquadPrediction> postprocess_squad(const std::vector<SquadExample>& examples,
                                               const std::vector<SquadFeature>& features,
                                               const std::vector<std::vector<float>>& start_logits,
                                               const std::vector<std::vector<float>>& end_logits,
                                               const SquadPostprocessOptions& options = {});

}  // namespace bertrt
