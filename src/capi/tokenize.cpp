// bertrt_tokenize: the model's WordPiece encoding of one text or a pair, with byte offsets.
#include <optional>

#include "bertrt/bertrt.h"
#include "capi/api_error.h"
#include "capi/handles.h"
#include "tokenizer/offsets.h"

using namespace bertrt;
using namespace bertrt::capi;

extern "C" {

bertrt_status bertrt_tokenize(const bertrt_model* model, const char* text_a, const char* text_b,
                              int32_t max_seq_length, int32_t* input_ids, int32_t* token_type_ids,
                              int32_t* attention_mask, int64_t* offsets, size_t capacity,
                              size_t* length) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_tokenize";
    const Tokenizer& tok = *model_arg(model, fn).loaded.tokenizer;
    require(text_a, fn, "text_a");
    require(length, fn, "length");
    require_utf8(text_a, fn, "text_a");
    if (text_b) require_utf8(text_b, fn, "text_b");
    if (max_seq_length < 0 || (max_seq_length > 0 && max_seq_length < (text_b ? 3 : 2)))
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: max_seq_length must be 0 (no limit) or ≥ {} ([CLS] A [SEP]{}), got {}", fn,
               text_b ? 3 : 2, text_b ? " B [SEP]" : "", max_seq_length);
    // The pieces with their spans (the same pieces as Tokenizer::tokenize), then the encoding of
    // their ids: truncation removes pieces from the end of a text, so the kept pieces of each
    // text are a prefix of its spans.
    const std::vector<TokenSpan> a = tokenize_with_offsets(tok, text_a);
    std::optional<std::vector<TokenSpan>> b;
    if (text_b) b = tokenize_with_offsets(tok, text_b);
    auto ids = [&](const std::vector<TokenSpan>& spans) {
      std::vector<std::string> pieces;
      pieces.reserve(spans.size());
      for (const TokenSpan& s : spans) pieces.push_back(s.token);
      return tok.convert_tokens_to_ids(pieces);
    };
    std::optional<std::vector<int32_t>> ids_b;
    if (b) ids_b = ids(*b);
    const Encoding e = tok.encode_ids(ids(a), ids_b, max_seq_length, /*pad=*/false);
    const size_t n = e.input_ids.size();
    *length = n;
    if (capacity < n)
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: capacity {} is too small: the encoding has {} pieces (*length says so)", fn,
               capacity, n);
    for (size_t i = 0; i < n; ++i) {
      if (input_ids) input_ids[i] = e.input_ids[i];
      if (token_type_ids) token_type_ids[i] = e.token_type_ids[i];
      if (attention_mask) attention_mask[i] = e.attention_mask[i];
    }
    if (!offsets) return;
    size_t next_a = 0, next_b = 0;
    for (size_t i = 0; i < n; ++i) {
      const int32_t id = e.input_ids[i];
      const bool special =
          i == 0 ||
          (id == tok.sep_id() && (i + 1 == n || e.token_type_ids[i + 1] != e.token_type_ids[i]));
      int64_t begin = -1, end = -1;
      if (!special) {
        const TokenSpan& s = e.token_type_ids[i] == 0 ? a.at(next_a++) : b->at(next_b++);
        begin = int64_t(s.begin), end = int64_t(s.end);
      }
      offsets[2 * i] = begin;
      offsets[2 * i + 1] = end;
    }
  });
}

}  // extern "C"
