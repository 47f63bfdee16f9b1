// MLM + NSP pre-training examples from tokenized documents, following google-research/bert
// create_pretraining_data.py (create_instances_from_document, truncate_seq_pair,
// create_masked_lm_predictions), and their packing into fixed-shape batches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "train/corpus.h"

namespace bertrt {

struct PretrainingExample {
  // Unpadded, length ≤ max_seq_length: [CLS] A [SEP] B [SEP] (NSP) or [CLS] A [SEP] (no NSP), with
  // the masked positions already replaced. token_type_ids: 0 for [CLS] A [SEP], 1 for B [SEP].
  std::vector<int32_t> input_ids, token_type_ids;
  // Same length (≤ max_predictions_per_seq): positions into input_ids, ascending, and the original
  // ids there (the MLM targets).
  std::vector<int32_t> masked_lm_positions, masked_lm_ids;
  // 0 = B is the real next segment, 1 = B is from another document (HF BertForPreTraining
  // convention); -1 when NSP is off (cross-entropy ignores targets < 0).
  int32_t next_sentence_label = 0;
};

struct PretrainingOptions {
  int max_seq_length = 128;
  int max_predictions_per_seq = 20;
  float masked_lm_prob = 0.15f;
  float short_seq_prob = 0.1f;  // probability of a shorter target length, 2..max_num_tokens (NSP)
  // false: RoBERTa FULL-SENTENCES (Liu et al. 2019, §4.2): single segments [CLS] A [SEP] packed
  // with whole sentences up to max_seq_length − 2 tokens, label −1, no short sequences.
  bool nsp = true;
  // Without NSP: let a segment run on into the next document, with an extra [SEP] between the two
  // (FULL-SENTENCES); false stops each segment at the end of its document (DOC-SENTENCES).
  bool cross_documents = true;
  // create_training_instances' dupe_factor: the documents are turned into examples this many
  // times (fresh pairs, target lengths and masks each time) before the one final shuffle.
  int dupe_factor = 1;
  // Whole-word masking (the reference's do_whole_word_mask): a word's "##" pieces are chosen
  // together. continuation[id] is true for ids whose token starts with "##" (see
  // wordpiece_continuations); needed when whole_word_mask is set.
  bool whole_word_mask = false;
  std::vector<bool> continuation;
  uint64_t seed = 12345;  // for the caller's std::mt19937_64
};

// continuation[id] = the vocab token `id` starts with "##" (a WordPiece that continues a word).
std::vector<bool> wordpiece_continuations(const Vocab& vocab);

// Counts for logging and for tests of the recipe.
struct PretrainingStats {
  size_t examples = 0;
  // Chunks of a single line always get a random B (the reference has no second segment to use),
  // so the share of label 1 is 0.5 only among the other examples.
  size_t forced_random_next = 0;
  size_t random_next = 0;       // examples with label 1 (forced ones included)
  size_t documents_passes = 0;  // create_instances_from_document calls (documents × dupe)
  size_t short_targets = 0;     // of those, how many drew a short target (p short_seq_prob)
  size_t masked_tokens = 0;
  // Random-next draws where the reference's 10 tries all hit the document itself; we then draw
  // uniformly among the others (the reference would use the same document).
  size_t same_document_redraws = 0;
};

// create_training_instances on documents already read: shuffle the documents, then dupe_factor
// times create_instances_from_document for each (NSP), or pack them into full-length single
// segments (no NSP); masks per create_masked_lm_predictions; finally shuffle the examples.
// With opts.nsp, needs ≥ 2 documents. vocab_size bounds the random replacement ids (uniform over
// [0, vocab_size), as the reference draws from all vocab words). The draws follow the reference
// one for one (random() → random_unit, randint → random_int, shuffle → random_shuffle of
// core/random.h), so tests/reference/create_pretraining_data_ref.py driven by the same
// generator gives the same examples. Throws bertrt::Error on invalid options (max_seq_length < 5
// with NSP, < 3 without; probabilities outside [0, 1]; max_predictions_per_seq < 1;
// dupe_factor < 1; whole_word_mask without continuation) or too few documents.
std::vector<PretrainingExample> create_pretraining_examples(const Documents& documents,
                                                            const PretrainingOptions& opts,
                                                            int32_t cls, int32_t sep, int32_t mask,
                                                            int vocab_size, std::mt19937_64& rng,
                                                            PretrainingStats* stats = nullptr);

// num_to_predict of create_masked_lm_predictions for a sequence of n tokens ([CLS]/[SEP] included):
// min(max_predictions, max(1, round_half_even(n · masked_lm_prob))), where masked_lm_prob is taken
// as the decimal the user wrote (0.15f → 0.15), so half-way cases round as Python 3 does.
int num_masked_predictions(size_t n, float masked_lm_prob, int max_predictions);

// A fixed-shape batch. B = batch_size, T = seq_len.
struct Batch {
  int batch_size = 0, seq_len = 0;
  std::vector<int32_t> input_ids;             // [B*T], padded with pad_id
  std::vector<int32_t> token_type_ids;        // [B*T], padded with 0
  std::vector<int32_t> attention_mask;        // [B*T], 1 for tokens, 0 for padding
  std::vector<int32_t> masked_lm_positions;   // [P], flat indices b*T + t into [B*T]
  std::vector<int32_t> masked_lm_ids;         // [P], the targets at those positions
  std::vector<int32_t> next_sentence_labels;  // [B]
};

// Examples [begin, begin + batch_size) padded to seq_len (the fixed max_seq_length, so every batch
// has the same shape). The last batch may be shorter: batch_size = examples.size() − begin. Throws
// bertrt::Error when begin ≥ examples.size() or an example is longer than seq_len.
Batch make_pretraining_batch(const std::vector<PretrainingExample>& examples, size_t begin,
                             int batch_size, int seq_len, int32_t pad_id);

}  // namespace bertrt
