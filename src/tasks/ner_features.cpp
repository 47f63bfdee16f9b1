#include "tasks/ner_features.h"

#include "core/error.h"

namespace bertrt {

NerEncoding encode_ner(const Tokenizer& tokenizer, const std::vector<NerSentence>& sentences,
                       int max_seq_length) {
  if (max_seq_length < 3)
    fail("token classification: max_seq_length {} is too small: [CLS] word [SEP] needs 3",
         max_seq_length);
  const size_t budget = size_t(max_seq_length) - 2;
  NerEncoding enc;
  for (size_t s = 0; s < sentences.size(); ++s) {
    const NerSentence& sent = sentences[s];
    if (!sent.tags.empty() && sent.tags.size() != sent.words.size())
      fail("token classification: sentence {} has {} words and {} tags", s, sent.words.size(),
           sent.tags.size());
    std::vector<std::vector<int32_t>> pieces(sent.words.size());
    for (size_t w = 0; w < sent.words.size(); ++w) {
      pieces[w] = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(sent.words[w]));
      if (pieces[w].empty()) ++enc.empty_words;
      if (pieces[w].size() > budget) {
        pieces[w].resize(budget);
        ++enc.truncated_words;
      }
    }
    size_t windows = 0;
    for (size_t w = 0; w < sent.words.size() || (w == 0 && windows == 0);) {
      NerFeature f;
      f.sentence = s;
      f.first_word = w;
      f.input_ids.push_back(tokenizer.cls_id());
      f.labels.push_back(kIgnoreLabel);
      f.word_index.push_back(-1);
      for (; w < sent.words.size() && f.input_ids.size() - 1 + pieces[w].size() <= budget; ++w) {
        for (size_t k = 0; k < pieces[w].size(); ++k) {
          f.input_ids.push_back(pieces[w][k]);
          const bool first = k == 0;
          f.labels.push_back(first && !sent.tags.empty() ? sent.tags[w] : kIgnoreLabel);
          f.word_index.push_back(first ? int32_t(w) : -1);
        }
      }
      f.num_words = w - f.first_word;
      f.input_ids.push_back(tokenizer.sep_id());
      f.labels.push_back(kIgnoreLabel);
      f.word_index.push_back(-1);
      f.token_type_ids.assign(f.input_ids.size(), 0);
      enc.features.push_back(std::move(f));
      ++windows;
      if (sent.words.empty()) break;
    }
    if (windows > 1) ++enc.split_sentences;
  }
  return enc;
}

std::vector<std::vector<int>> ner_word_predictions(const std::vector<NerFeature>& features,
                                                   const std::vector<std::vector<float>>& logits,
                                                   int num_labels,
                                                   const std::vector<size_t>& num_words) {
  if (logits.size() != features.size())
    fail("token classification: {} logit arrays for {} features", logits.size(), features.size());
  if (num_labels < 1) fail("token classification: num_labels {} < 1", num_labels);
  std::vector<std::vector<int>> out(num_words.size());
  for (size_t s = 0; s < num_words.size(); ++s) out[s].assign(num_words[s], 0);
  for (size_t f = 0; f < features.size(); ++f) {
    const NerFeature& feat = features[f];
    const size_t T = feat.input_ids.size();
    if (logits[f].size() != T * size_t(num_labels))
      fail("token classification: feature {}: {} logits, expected {} × {}", f, logits[f].size(), T,
           num_labels);
    if (feat.sentence >= out.size())
      fail("token classification: feature {} belongs to sentence {} of {}", f, feat.sentence,
           out.size());
    for (size_t t = 0; t < T; ++t) {
      const int32_t w = feat.word_index[t];
      if (w < 0) continue;
      if (size_t(w) >= out[feat.sentence].size())
        fail("token classification: feature {}: word {} beyond sentence {} ({} words)", f, w,
             feat.sentence, out[feat.sentence].size());
      const float* row = logits[f].data() + t * size_t(num_labels);
      int best = 0;
      for (int k = 1; k < num_labels; ++k)
        if (row[k] > row[best]) best = k;
      out[feat.sentence][size_t(w)] = best;
    }
  }
  return out;
}

std::vector<std::vector<std::string>> tag_strings(const std::vector<std::vector<int>>& ids,
                                                  const std::vector<std::string>& labels) {
  std::vector<std::vector<std::string>> out(ids.size());
  for (size_t s = 0; s < ids.size(); ++s)
    for (int id : ids[s]) {
      if (id < 0 || size_t(id) >= labels.size())
        fail("token classification: label id {} outside [0, {})", id, labels.size());
      out[s].push_back(labels[size_t(id)]);
    }
  return out;
}

}  // namespace bertrt
