// BasicTokenizer (google-research/bert tokenization.py), with Hugging Face's never_split for the
// special tokens: split the text on special tokens, then for each other stretch clean it, space
// out CJK ideographs, split on whitespace, lower-case / strip accents per token, split punctuation.
#include <algorithm>
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
void clean(const char32_t* begin, const char32_t* end, bool space_cjk, std::u32string& out) {
  out.clear();
  for (const char32_t* p = begin; p != end; ++p) {
    const char32_t c = *p;
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

// One stretch of decoded text that holds no special token.
void append_plain_tokens(const char32_t* begin, const char32_t* end,
                         const TokenizerOptions& options, BasicScratch& s,
                         std::vector<std::string>& out) {
  // Hugging Face: strip_accents unset follows do_lower_case; set, it applies either way.
  const bool lower = options.do_lower_case;
  const bool strip = options.strip_accents.value_or(options.do_lower_case);
  clean(begin, end, options.tokenize_chinese_chars, s.cleaned);

  const char32_t* p = s.cleaned.data();
  const char32_t* const stop = p + s.cleaned.size();
  while (p != stop) {
    // whitespace_tokenize is str.split(): after cleaning, ' ' and U+2028/U+2029 remain to split on.
    while (p != stop && unicode::is_python_space(*p)) ++p;
    const char32_t* token_end = p;
    while (token_end != stop && !unicode::is_python_space(*token_end)) ++token_end;
    if (p == token_end) break;
    const char32_t* b = p;
    const char32_t* e = token_end;
    if (lower) {  // str.lower() of the whole token: Final_Sigma looks across punctuation
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

// The special tokens of `options`, decoded, to be matched in decoded text.
struct SpecialTokens {
  explicit SpecialTokens(const TokenizerOptions& options) {
    for (const std::string* t : {&options.unk_token, &options.sep_token, &options.pad_token,
                                 &options.cls_token, &options.mask_token}) {
      std::u32string cps;
      unicode::decode_utf8(*t, cps);
      if (cps.empty()) continue;
      if (cps[0] < 128) ascii_first[cps[0]] = true;
      utf8.push_back(t);
      decoded.push_back(std::move(cps));
    }
  }
  // Index of the longest special token that starts at p, or -1.
  int match(const char32_t* p, const char32_t* end) const {
    if (*p < 128 && !ascii_first[*p]) return -1;  // fast path: no special token starts here
    int best = -1;
    for (size_t k = 0; k < decoded.size(); ++k) {
      const std::u32string& t = decoded[k];
      if (static_cast<size_t>(end - p) >= t.size() && std::equal(t.begin(), t.end(), p) &&
          (best < 0 || t.size() > decoded[best].size()))
        best = static_cast<int>(k);
    }
    return best;
  }
  std::vector<std::u32string> decoded;
  std::vector<const std::string*> utf8;
  bool ascii_first[128] = {};
};

}  // namespace

bool is_special_token(std::string_view token, const TokenizerOptions& options) {
  return token == options.unk_token || token == options.sep_token || token == options.pad_token ||
         token == options.cls_token || token == options.mask_token;
}

void append_basic_tokens(std::string_view text, const TokenizerOptions& options,
                         std::vector<std::string>& out) {
  BasicScratch s;
  // Decode first (convert_to_unicode: malformed bytes dropped), then find the special tokens,
  // case-sensitively, before any cleaning or lower-casing; they are never split (Hugging Face
  // tokenize(): the added-token split, then never_split in BasicTokenizer).
  unicode::decode_utf8(text, s.decoded);
  const SpecialTokens specials(options);
  const char32_t* const begin = s.decoded.data();
  const char32_t* const end = begin + s.decoded.size();
  const char32_t* stretch = begin;
  for (const char32_t* p = begin; p != end;) {
    const int k = specials.match(p, end);
    if (k < 0) {
      ++p;
      continue;
    }
    append_plain_tokens(stretch, p, options, s, out);
    out.push_back(*specials.utf8[k]);
    p += specials.decoded[k].size();
    stretch = p;
  }
  append_plain_tokens(stretch, end, options, s, out);
}

}  // namespace detail

std::vector<std::string> Tokenizer::basic_tokenize(const std::string& text) const {
  std::vector<std::string> out;
  detail::append_basic_tokens(text, options_, out);
  return out;
}

}  // namespace bertrt
