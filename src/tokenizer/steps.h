// The tokenizer's steps as free functions appending to caller-owned vectors, so that tokenize()
// runs over a whole text without a temporary vector per word. Internal to src/tokenizer/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace bertrt::detail {

// True when `token` is one of the special tokens of `options` (Hugging Face never_split).
bool is_special_token(std::string_view token, const TokenizerOptions& options);

// Appends the BasicTokenizer tokens of `text` (see Tokenizer::basic_tokenize).
void append_basic_tokens(std::string_view text, const TokenizerOptions& options,
                         std::vector<std::string>& out);

// Reused buffers of the WordPiece step.
struct WordpieceScratch {
  std::u32string code_points;
  std::string bytes;            // one whitespace-free word, UTF-8
  std::vector<size_t> offsets;  // byte offset of each code point of `bytes`, plus the end
  std::string key;              // the candidate piece looked up in the vocab
};

// Appends the WordPiece pieces of `text` (whitespace-split first, as tokenization.py does).
void append_wordpieces(std::string_view text, const Vocab& vocab, const TokenizerOptions& options,
                       std::vector<std::string>& out, WordpieceScratch& scratch);

}  // namespace bertrt::detail
