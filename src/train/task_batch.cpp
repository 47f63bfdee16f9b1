#include "train/task_batch.h"

#include <algorithm>
#include <numeric>

namespace bertrt {

std::vector<EncodedExample> encode_examples(const Tokenizer& tokenizer,
                                            const std::vector<TextExample>& examples,
                                            int max_seq_length) {
  std::vector<EncodedExample> out;
  out.reserve(examples.size());
  for (const TextExample& e : examples) {
    Encoding enc = tokenizer.encode(e.text_a, e.text_b, max_seq_length, /*pad=*/false);
    out.push_back({std::move(enc.input_ids), std::move(enc.token_type_ids), e.label, e.target});
  }
  return out;
}

Targets TaskBatch::targets() const {
  Targets t;
  if (!labels.empty()) t.labels = labels.data();
  if (!scores.empty()) t.scores = scores.data();
  if (!token_labels.empty()) t.token_labels = token_labels.data();
  if (!start_positions.empty()) {
    t.start_positions = start_positions.data();
    t.end_positions = end_positions.data();
  }
  return t;
}

int64_t TaskBatch::real_tokens() const {
  return std::accumulate(attention_mask.begin(), attention_mask.end(), int64_t(0));
}

namespace {

// The shared part: ids, token types and mask of the chosen items, padded to the longest.
template <class Item>
TaskBatch pad_inputs(const std::vector<Item>& items, const std::vector<size_t>& order,
                     size_t begin, int batch_size, int32_t pad_id) {
  TaskBatch b;
  b.B = int(std::min<size_t>(size_t(batch_size), order.size() - begin));
  for (int i = 0; i < b.B; ++i)
    b.T = std::max(b.T, int(items[order[begin + i]].input_ids.size()));
  const size_t n = size_t(b.B) * b.T;
  b.input_ids.assign(n, pad_id);
  b.token_type_ids.assign(n, 0);
  b.attention_mask.assign(n, 0);
  for (int i = 0; i < b.B; ++i) {
    const Item& e = items[order[begin + i]];
    const size_t row = size_t(i) * b.T;
    std::copy(e.input_ids.begin(), e.input_ids.end(), b.input_ids.begin() + row);
    std::copy(e.token_type_ids.begin(), e.token_type_ids.end(), b.token_type_ids.begin() + row);
    std::fill_n(b.attention_mask.begin() + row, e.input_ids.size(), 1);
  }
  return b;
}

}  // namespace

TaskBatch make_sequence_batch(const std::vector<EncodedExample>& items,
                              const std::vector<size_t>& order, size_t begin, int batch_size,
                              int32_t pad_id, bool regression) {
  TaskBatch b = pad_inputs(items, order, begin, batch_size, pad_id);
  for (int i = 0; i < b.B; ++i) {
    const EncodedExample& e = items[order[begin + i]];
    if (regression)
      b.scores.push_back(e.target);
    else
      b.labels.push_back(e.label);
  }
  return b;
}

TaskBatch make_ner_batch(const std::vector<NerFeature>& items, const std::vector<size_t>& order,
                         size_t begin, int batch_size, int32_t pad_id) {
  TaskBatch b = pad_inputs(items, order, begin, batch_size, pad_id);
  b.token_labels.assign(size_t(b.B) * b.T, kIgnoreLabel);
  for (int i = 0; i < b.B; ++i) {
    const NerFeature& f = items[order[begin + i]];
    std::copy(f.labels.begin(), f.labels.end(), b.token_labels.begin() + size_t(i) * b.T);
  }
  return b;
}

TaskBatch make_squad_batch(const std::vector<SquadFeature>& items, const std::vector<size_t>& order,
                           size_t begin, int batch_size, int32_t pad_id) {
  TaskBatch b = pad_inputs(items, order, begin, batch_size, pad_id);
  for (int i = 0; i < b.B; ++i) {
    const SquadFeature& f = items[order[begin + i]];
    b.start_positions.push_back(f.start_position);
    b.end_positions.push_back(f.end_position);
  }
  return b;
}

}  // namespace bertrt
