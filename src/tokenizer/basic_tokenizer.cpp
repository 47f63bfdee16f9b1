// BasicTokenizer (google-research/bert tokenization.py), with Hugging Face's never_split for the
// special tokens: split the text on special tokens, then for each other stretch clean it, space
// out CJK ideographs, split on whitespace, lower-case / strip accents per token, split punctuation.
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/steps.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_text.h"

namespace bertrt {
namespace detail {
namespace {

struct BasicScratch {
  std::u32string decoded, cleaned, lowered, stripped;
  std::string word;
};

// _clean_text + _tokenize_chinese_chars: drop NUL, U+FFFD and control characters, map whitespace
// to ' ', surround CJK ideographs with spaces.
void clean(const std::u32string& in, bool space_cjk, std::u32string& out) {
  out.clear();
  for (char32_t c : in) {
    if (c == 0 || c == 0xFFFD || unicode::is_control(c)) continue;
    if (unicode::is_whitespace(c)) {
      out.push_back(U' ');
    } else if (space_cjk && unicode::is_cjk_ideograph(c)) {
      out.push_back(U' ');
      out.push_back(c);
      out.push_back(U' ');
    } else {
      out.push_back(c);
    }
  }
}

// _run_split_on_punc: every punctuation character becomes its own token.
void split_on_punctuation(const char32_t* begin, const char32_t* end, std::string& word,
                          std::vector<std::string>& out) {
  word.clear();
  for (const char32_t* p = begin; p != end; ++p) {
    if (unicode::is_punctuation(*p)) {
      if (!word.empty()) out.push_back(word), word.clear();
      std::string punct;
      unicode::append_utf8(*p, punct);
      out.push_back(std::move(punct));
    } else {
      unicode::append_utf8(*p, word);
    }
  }
  if (!word.empty()) out.push_back(word);
}

// One stretch of text that holds no special token.
void append_plain_tokens(std::string_view text, const TokenizerOptions& options, BasicScratch& s,
                         std::vector<std::string>& out) {
  // Hugging Face: strip_accents unset follows do_lower_case; set, it applies either way.
  const bool lower = options.do_lower_case;
  const bool strip = options.strip_accents.value_or(options.do_lower_case);
  s.decoded.clear();
  unicode::decode_utf8(text, s.decoded);
  clean(s.decoded, options.tokenize_chinese_chars, s.cleaned);

  const char32_t* p = s.cleaned.data();
  const char32_t* const end = p + s.cleaned.size();
  while (p != end) {
    // whitespace_tokenize is str.split(): after cleaning, ' ' and U+2028/U+2029 remain to split on.
    while (p != end && unicode::is_python_space(*p)) ++p;
    const char32_t* token_end = p;
    while (token_end != end && !unicode::is_python_space(*token_end)) ++token_end;
    if (p == token_end) break;
    const char32_t* b = p;
    const char32_t* e = token_end;
    if (lower) {  // str.lower() of the whole whitespace token (Final_Sigma looks across
                  // punctuation)
      s.lowered.clear();
      unicode::append_lower(b, e, s.lowered);
      b = s.lowered.data(), e = b + s.lowered.size();
    }
    if (strip) {
      s.stripped.clear();
      unicode::append_strip_accents(b, e, s.stripped);
      b = s.stripped.data(), e = b + s.stripped.size();
    }
    split_on_punctuation(b, e, s.word, out);
    p = token_end;
  }
}

// Length of the longest special token of `options` that starts at text[pos], or 0.
size_t special_token_at(std::string_view text, size_t pos, const TokenizerOptions& options) {
  size_t best = 0;
  for (const std::string* t : {&options.unk_token, &options.sep_token, &options.pad_token,
                               &options.cls_token, &options.mask_token}) {
    if (!t->empty() && t->size() > best && text.compare(pos, t->size(), *t) == 0) best = t->size();
  }
  return best;
}

}  // namespace

bool is_special_token(std::string_view token, const TokenizerOptions& options) {
  return token == options.unk_token || token == options.sep_token || token == options.pad_token ||
         token == options.cls_token || token == options.mask_token;
}

void append_basic_tokens(std::string_view text, const TokenizerOptions& options,
                         std::vector<std::string>& out) {
  // Special tokens are found in the raw text, case-sensitively, before any cleaning or
  // lower-casing, and are never split (Hugging Face tokenize(): added-token split + never_split).
  bool first_byte[256] = {};
  for (const std::string* t : {&options.unk_token, &options.sep_token, &options.pad_token,
                               &options.cls_token, &options.mask_token}) {
    if (!t->empty()) first_byte[static_cast<unsigned char>((*t)[0])] = true;
  }
  BasicScratch scratch;
  size_t stretch = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t len =
        first_byte[static_cast<unsigned char>(text[i])] ? special_token_at(text, i, options) : 0;
    if (len == 0) {
      ++i;
      continue;
    }
    append_plain_tokens(text.substr(stretch, i - stretch), options, scratch, out);
    out.emplace_back(text.substr(i, len));
    i += len;
    stretch = i;
  }
  append_plain_tokens(text.substr(stretch), options, scratch, out);
}

}  // namespace detail

std::vector<std::string> Tokenizer::basic_tokenize(const std::string& text) const {
  std::vector<std::string> out;
  detail::append_basic_tokens(text, options_, out);
  return out;
}

}  // namespace bertrt
