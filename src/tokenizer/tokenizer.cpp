// Tokenizer construction (special-token ids), the full tokenize pipeline and token -> id lookup.
#include "tokenizer/tokenizer.h"

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "tokenizer/steps.h"
#include "tokenizer/unicode_text.h"

namespace bertrt {
namespace {

int32_t require_token(const Vocab& vocab, const std::string& token, const char* role) {
  if (token.empty()) fail("tokenizer: the {} token is empty", role);
  const int32_t id = vocab.find(token);
  if (id < 0)
    fail("tokenizer: {} token '{}' is missing from the vocab ({} tokens)", role, token,
         vocab.size());
  return id;
}

}  // namespace

Tokenizer::Tokenizer(Vocab vocab, TokenizerOptions options)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  if (options_.max_input_chars_per_word < 1)
    fail("tokenizer: max_input_chars_per_word must be >= 1, got {}",
         options_.max_input_chars_per_word);
  cls_id_ = require_token(vocab_, options_.cls_token, "cls");
  sep_id_ = require_token(vocab_, options_.sep_token, "sep");
  pad_id_ = require_token(vocab_, options_.pad_token, "pad");
  unk_id_ = require_token(vocab_, options_.unk_token, "unk");
  mask_id_ = require_token(vocab_, options_.mask_token, "mask");
}

std::vector<std::string> Tokenizer::tokenize(const std::string& text) const {
  std::vector<std::string> basic;
  detail::append_basic_tokens(text, options_, basic);
  std::vector<std::string> out;
  out.reserve(basic.size() + basic.size() / 4);
  detail::WordpieceScratch scratch;
  for (std::string& token : basic) {
    // Hugging Face BertTokenizer._tokenize: never_split tokens skip WordPiece.
    if (detail::is_special_token(token, options_)) {
      out.push_back(std::move(token));
    } else {
      detail::append_wordpieces(token, vocab_, options_, out, scratch);
    }
  }
  return out;
}

std::vector<int32_t> Tokenizer::convert_tokens_to_ids(
    const std::vector<std::string>& tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(tokens.size());
  for (const std::string& token : tokens) {
    const int32_t id = vocab_.find(token);
    ids.push_back(id >= 0 ? id : unk_id_);
  }
  return ids;
}

std::string lower_text(std::string_view text) {
  std::u32string cps, lower;
  unicode::decode_utf8(text, cps);
  unicode::append_lower(cps.data(), cps.data() + cps.size(), lower);
  std::string out;
  for (char32_t c : lower) unicode::append_utf8(c, out);
  return out;
}

}  // namespace bertrt
