// [CLS] A [SEP] (B [SEP]) encoding with longest-first truncation and padding
// (google-research/bert run_classifier.py convert_single_example / _truncate_seq_pair; Hugging Face
// "longest_first" gives the same result).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace bertrt {
namespace {

// Removes one token at a time from the end of the longer sequence (B on ties) until the two fit.
void truncate_longest_first(std::vector<int32_t>& a, std::optional<std::vector<int32_t>>& b,
                            size_t budget) {
  while (a.size() + (b ? b->size() : 0) > budget) {
    if (!b || a.size() > b->size()) {
      a.pop_back();
    } else {
      b->pop_back();
    }
  }
}

void check_ids(const std::vector<int32_t>& ids, const Vocab& vocab, const char* which) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab.size())
      fail("encode: sequence {} position {}: id {} is outside the vocab [0, {})", which, i, ids[i],
           vocab.size());
  }
}

}  // namespace

Encoding Tokenizer::encode(const std::string& text_a, const std::optional<std::string>& text_b,
                           int max_seq_length, bool pad) const {
  std::optional<std::vector<int32_t>> ids_b;
  if (text_b) ids_b = convert_tokens_to_ids(tokenize(*text_b));
  return encode_ids(convert_tokens_to_ids(tokenize(text_a)), std::move(ids_b), max_seq_length, pad);
}

Encoding Tokenizer::encode_ids(std::vector<int32_t> ids_a,
                               std::optional<std::vector<int32_t>> ids_b, int max_seq_length,
                               bool pad) const {
  const int specials = ids_b ? 3 : 2;
  if (max_seq_length < 0 || (max_seq_length > 0 && max_seq_length < specials))
    fail(
        "encode: max_seq_length {} is too small: {} needs at least {} positions for [CLS] and "
        "[SEP] (0 means no limit)",
        max_seq_length, ids_b ? "a pair" : "a single sequence", specials);
  check_ids(ids_a, vocab_, "A");
  if (ids_b) check_ids(*ids_b, vocab_, "B");
  if (max_seq_length > 0)
    truncate_longest_first(ids_a, ids_b, static_cast<size_t>(max_seq_length - specials));

  Encoding e;
  auto push = [&](int32_t id, int32_t type) {
    e.input_ids.push_back(id);
    e.token_type_ids.push_back(type);
    e.attention_mask.push_back(1);
  };
  push(cls_id_, 0);
  for (int32_t id : ids_a) push(id, 0);
  push(sep_id_, 0);
  if (ids_b) {
    for (int32_t id : *ids_b) push(id, 1);
    push(sep_id_, 1);
  }
  if (pad && max_seq_length > 0) {
    const size_t n = static_cast<size_t>(max_seq_length);
    e.input_ids.resize(n, pad_id_);
    e.token_type_ids.resize(n, 0);
    e.attention_mask.resize(n, 0);
  }
  e.tokens.reserve(e.input_ids.size());
  for (int32_t id : e.input_ids) e.tokens.push_back(vocab_.token(id));
  return e;
}

}  // namespace bertrt
