// WordpieceTokenizer (google-research/bert tokenization.py): greedy longest-match-first over code
// points, continuation pieces prefixed with "##"; a word longer than max_input_chars_per_word or
// with a stretch no piece matches becomes the unknown token as a whole.
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/steps.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_text.h"

namespace bertrt {
namespace detail {
namespace {

// One whitespace-free word, held in scratch.bytes with its code-point offsets.
void append_word_pieces(const Vocab& vocab, const TokenizerOptions& options,
                        std::vector<std::string>& out, WordpieceScratch& s) {
  const size_t n = s.offsets.size() - 1;  // code points
  if (n > static_cast<size_t>(options.max_input_chars_per_word)) {
    out.push_back(options.unk_token);
    return;
  }
  const size_t mark = out.size();
  for (size_t start = 0; start < n;) {
    size_t end = n;
    for (; end > start; --end) {
      s.key.assign(start > 0 ? "##" : "");
      s.key.append(s.bytes, s.offsets[start], s.offsets[end] - s.offsets[start]);
      if (vocab.find(s.key) >= 0) break;
    }
    if (end == start) {  // no piece matches here: the whole word is unknown
      out.resize(mark);
      out.push_back(options.unk_token);
      return;
    }
    out.push_back(s.key);
    start = end;
  }
}

}  // namespace

void append_wordpieces(std::string_view text, const Vocab& vocab, const TokenizerOptions& options,
                       std::vector<std::string>& out, WordpieceScratch& s) {
  s.code_points.clear();
  unicode::decode_utf8(text, s.code_points);
  const char32_t* p = s.code_points.data();
  const char32_t* const end = p + s.code_points.size();
  while (p != end) {  // whitespace_tokenize(text)
    while (p != end && unicode::is_python_space(*p)) ++p;
    if (p == end) break;
    s.bytes.clear();
    s.offsets.clear();
    for (; p != end && !unicode::is_python_space(*p); ++p) {
      s.offsets.push_back(s.bytes.size());
      unicode::append_utf8(*p, s.bytes);
    }
    s.offsets.push_back(s.bytes.size());
    append_word_pieces(vocab, options, out, s);
  }
}

}  // namespace detail

std::vector<std::string> Tokenizer::wordpiece_tokenize(const std::string& word) const {
  std::vector<std::string> out;
  detail::WordpieceScratch scratch;
  detail::append_wordpieces(word, vocab_, options_, out, scratch);
  return out;
}

}  // namespace bertrt
