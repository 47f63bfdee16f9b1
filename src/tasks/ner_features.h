// Token classification (NER) as the BERT paper §4.3 does it: each word is WordPiece-tokenized on
// its own (Hugging Face is_split_into_words), the FIRST piece of a word carries the word's label,
// later pieces and [CLS]/[SEP] carry kIgnoreLabel (-100, skipped by the loss); predictions read the
// logits of each word's first piece.
//
// Sentences longer than max_seq_length pieces are split, not truncated: words are packed greedily
// into consecutive non-overlapping windows of at most max_seq_length - 2 pieces, cut only between
// words, so every word is labelled and predicted exactly once. A single word with more pieces than
// a window holds keeps its first max_seq_length - 2 pieces (only the first one matters).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tasks/conll.h"
#include "tokenizer/tokenizer.h"

namespace bertrt {

constexpr int32_t kIgnoreLabel = -100;  // PyTorch CrossEntropyLoss ignore_index

// One window of one sentence: [CLS] pieces [SEP], unpadded, T = input_ids.size() ≤ max_seq_length.
struct NerFeature {
  size_t sentence = 0;    // index into the sentences given to encode_ner
  size_t first_word = 0;  // the window holds words [first_word, first_word + num_words)
  size_t num_words = 0;
  std::vector<int32_t> input_ids, token_type_ids;  // [T], token types all 0
  std::vector<int32_t> labels;      // [T]: the word's tag id at its first piece, else kIgnoreLabel
  std::vector<int32_t> word_index;  // [T]: the word (within the sentence) at its first piece, else -1
};

struct NerEncoding {
  std::vector<NerFeature> features;  // in sentence order, windows of a sentence consecutive
  size_t split_sentences = 0;  // sentences that needed more than one window
  size_t truncated_words = 0;  // words whose pieces did not fit a window alone
  size_t empty_words = 0;      // words with no pieces at all (only control characters): never
                               // labelled, predicted as label 0 ("O")
};

// max_seq_length ≥ 3, else bertrt::Error. Sentences without tags (prediction input) are allowed:
// their labels are kIgnoreLabel throughout.
NerEncoding encode_ner(const Tokenizer& tokenizer, const std::vector<NerSentence>& sentences,
                       int max_seq_length);

// One label id per word of every sentence from the per-feature logits: logits[f] is row-major
// [T_f, num_labels] for features[f] (T_f = its input_ids.size()); a word's label is the argmax at
// its first piece (ties: the lower id). num_words[s] is the word count of sentence s. Throws
// bertrt::Error when the sizes disagree.
std::vector<std::vector<int>> ner_word_predictions(const std::vector<NerFeature>& features,
                                                   const std::vector<std::vector<float>>& logits,
                                                   int num_labels,
                                                   const std::vector<size_t>& num_words);

// Tag strings of label ids (for entity_scores).
std::vector<std::vector<std::string>> tag_strings(const std::vector<std::vector<int>>& ids,
                                                  const std::vector<std::string>& labels);

}  // namespace bertrt
