// WordPiece tokenization that also says where each piece came from in the input text: the byte
// range of the original characters it covers (Hugging Face fast tokenizers' offset mapping), so a
// span of pieces maps back to a faithful substring of the original text (SQuAD answers).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace bertrt {

struct TokenSpan {
  std::string token;  // the WordPiece piece, as Tokenizer::tokenize gives it
  size_t begin = 0;   // [begin, end): byte offsets into the text passed in
  size_t end = 0;
};

// The same pieces as tokenizer.tokenize(text), in order, each with the byte range of the
// original characters it came from. A piece from part of a character that lower-casing or accent
// stripping expanded (U+0130 -> "i" + U+0307) covers that whole character; an [UNK] covers its
// whole word; "##" continuations cover only their own characters. Ranges never overlap.
std::vector<TokenSpan> tokenize_with_offsets(const Tokenizer& tokenizer, const std::string& text);

}  // namespace bertrt
