// Offset-tracking replay of the tokenizer pipeline (basic_tokenizer.cpp, wordpiece.cpp): every
// code point produced by cleaning, lower-casing and accent stripping remembers the original code
// points it came from. Tests check the pieces equal Tokenizer::tokenize on real text.
#include "tokenizer/offsets.h"

#include <string_view>

#include "tokenizer/steps.h"
#include "tokenizer/unicode_text.h"

namespace bertrt {
namespace {

// A code point of the transformed text and the original code points [first, last] it came from.
struct Tagged {
  char32_t c;
  size_t first, last;
};

struct Decoded {
  std::u32string cps;
  std::vector<size_t> begin, end;  // byte range of each code point in the input
};

// decode_utf8 one sequence at a time, so each code point keeps its bytes; malformed bytes are
// dropped as decode_utf8 drops them.
Decoded decode_with_offsets(const std::string& text) {
  Decoded d;
  std::u32string one;
  for (size_t i = 0; i < text.size();) {
    const unsigned char lead = static_cast<unsigned char>(text[i]);
    const size_t len = lead < 0x80         ? 1
                       : (lead >> 5) == 6  ? 2
                       : (lead >> 4) == 14 ? 3
                       : (lead >> 3) == 30 ? 4
                                           : 1;
    one.clear();
    if (i + len <= text.size()) unicode::decode_utf8(std::string_view(text).substr(i, len), one);
    // A malformed lead is dropped by decode_utf8 and the bytes after it decoded on their own, which
    // can also give one code point (0xE6 ' ' 0xC3 gives ' '): only a code point that takes all
    // `len` bytes is this sequence (fuzz_tokenizer regression).
    const auto encoded_len = [](char32_t c) -> size_t {
      return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    };
    if (one.size() == 1 && encoded_len(one[0]) == len) {
      d.cps.push_back(one[0]);
      d.begin.push_back(i);
      d.end.push_back(i + len);
      i += len;
    } else {
      ++i;  // a malformed byte: dropped
    }
  }
  return d;
}

// Longest special token (case-sensitive, before any cleaning) starting at code point i, in code
// points; 0 when none.
size_t special_at(const Decoded& d, size_t i, const TokenizerOptions& o,
                  const std::string*& which) {
  size_t best = 0;
  for (const std::string* t :
       {&o.unk_token, &o.sep_token, &o.pad_token, &o.cls_token, &o.mask_token}) {
    std::u32string cps;
    unicode::decode_utf8(*t, cps);
    if (cps.empty() || cps.size() > d.cps.size() - i || cps.size() <= best) continue;
    if (d.cps.compare(i, cps.size(), cps) == 0) best = cps.size(), which = t;
  }
  return best;
}

// Applies `f` (append_lower / append_strip_accents) per code point so each output keeps its
// source; `whole` is f over the whole word, used when the per-point result differs (Final_Sigma
// for lower, canonical reordering for NFD), in which case each output covers the whole word.
template <typename F>
std::vector<Tagged> transform(const std::vector<Tagged>& in, F f) {
  std::u32string word, whole, part, joined;
  for (const Tagged& t : in) word.push_back(t.c);
  f(word.data(), word.data() + word.size(), whole);
  std::vector<Tagged> out;
  for (const Tagged& t : in) {
    part.clear();
    f(&t.c, &t.c + 1, part);
    for (char32_t c : part) out.push_back({c, t.first, t.last});
    joined += part;
  }
  if (joined == whole) return out;
  // Same length (the per-point expansions do not depend on context): keep the per-point sources.
  if (whole.size() == out.size()) {
    for (size_t k = 0; k < out.size(); ++k) out[k].c = whole[k];
    return out;
  }
  out.clear();
  for (char32_t c : whole) out.push_back({c, in.front().first, in.back().last});
  return out;
}

struct Emitter {
  const Tokenizer& tok;
  const Decoded& d;
  std::vector<TokenSpan>& out;

  void push(std::string token, size_t first, size_t last) {
    out.push_back({std::move(token), d.begin[first], d.end[last]});
  }

  // WordPiece of one basic token (wordpiece.cpp): greedy longest match over code points.
  void wordpiece(const std::vector<Tagged>& w) {
    const TokenizerOptions& o = tok.options();
    if (w.size() > static_cast<size_t>(o.max_input_chars_per_word))
      return push(o.unk_token, w.front().first, w.back().last);
    std::vector<std::string> utf8(w.size());
    for (size_t k = 0; k < w.size(); ++k) unicode::append_utf8(w[k].c, utf8[k]);
    const size_t mark = out.size();
    std::string key;
    for (size_t start = 0; start < w.size();) {
      size_t end = w.size();
      for (; end > start; --end) {
        key.assign(start > 0 ? "##" : "");
        for (size_t k = start; k < end; ++k) key += utf8[k];
        if (tok.vocab().find(key) >= 0) break;
      }
      if (end == start) {
        out.resize(mark);
        return push(o.unk_token, w.front().first, w.back().last);
      }
      push(key, w[start].first, w[end - 1].last);
      start = end;
    }
  }

  // One whitespace-free word of cleaned text: lower-case, strip accents, split punctuation.
  void word(std::vector<Tagged> w) {
    const TokenizerOptions& o = tok.options();
    if (o.do_lower_case) w = transform(w, unicode::append_lower);
    if (o.strip_accents.value_or(o.do_lower_case)) w = transform(w, unicode::append_strip_accents);
    std::vector<Tagged> part;
    for (const Tagged& t : w) {
      if (unicode::is_punctuation(t.c)) {
        if (!part.empty()) wordpiece(part), part.clear();
        wordpiece({t});
      } else {
        part.push_back(t);
      }
    }
    if (!part.empty()) wordpiece(part);
  }

  // A stretch without special tokens: _clean_text, CJK spacing, whitespace split.
  void stretch(size_t from, size_t to) {
    const TokenizerOptions& o = tok.options();
    std::vector<Tagged> w;
    auto flush = [&] {
      if (!w.empty()) word(std::move(w));
      w.clear();
    };
    for (size_t i = from; i < to; ++i) {
      const char32_t c = d.cps[i];
      if (c == 0 || c == 0xFFFD || unicode::is_control(c)) continue;
      if (unicode::is_whitespace(c) || unicode::is_python_space(c)) {
        flush();
      } else if (o.tokenize_chinese_chars && unicode::is_cjk_ideograph(c)) {
        flush();
        w.push_back({c, i, i});
        flush();
      } else {
        w.push_back({c, i, i});
      }
    }
    flush();
  }
};

}  // namespace

std::vector<TokenSpan> tokenize_with_offsets(const Tokenizer& tokenizer, const std::string& text) {
  const Decoded d = decode_with_offsets(text);
  std::vector<TokenSpan> out;
  Emitter e{tokenizer, d, out};
  size_t stretch = 0;
  for (size_t i = 0; i < d.cps.size();) {
    const std::string* which = nullptr;
    const size_t n = special_at(d, i, tokenizer.options(), which);
    if (n == 0) {
      ++i;
      continue;
    }
    e.stretch(stretch, i);
    e.push(*which, i, i + n - 1);
    i += n;
    stretch = i;
  }
  e.stretch(stretch, d.cps.size());
  return out;
}

}  // namespace bertrt
