// Code-point helpers for the BERT tokenizer: UTF-8 decoding and the character classes and
// transformations of google-research/bert tokenization.py, on Python 3 str semantics.
// Internal to src/tokenizer/.
#pragma once

#include <string>
#include <string_view>

namespace bertrt::unicode {

// Appends the code points of `s` to `out`. Malformed bytes (bad lead or continuation bytes,
// overlong forms, surrogates, > U+10FFFF) are dropped, as convert_to_unicode's
// bytes.decode("utf-8", "ignore") does.
void decode_utf8(std::string_view s, std::u32string& out);
void append_utf8(char32_t c, std::string& out);
// Number of code points in valid UTF-8 (counts the bytes that are not continuation bytes).
size_t count_code_points(std::string_view s);

// tokenization.py _is_whitespace: ' ', \t, \n, \r, or category Zs.
bool is_whitespace(char32_t c);
// tokenization.py _is_control: category Cc or Cf, except \t, \n, \r.
bool is_control(char32_t c);
// tokenization.py _is_punctuation: ASCII 33-47, 58-64, 91-96, 123-126, or category P*.
bool is_punctuation(char32_t c);
// tokenization.py _is_chinese_char: the CJK Unified Ideographs blocks (not Hangul, kana).
bool is_cjk_ideograph(char32_t c);
// Python str.isspace(): what str.split() (whitespace_tokenize) splits on.
bool is_python_space(char32_t c);

// Appends Python's str.lower() of [begin, end): the simple lowercase mapping plus the full
// mapping U+0130 -> "i\u0307" and the Final_Sigma rule for U+03A3 (Unicode SpecialCasing.txt;
// CPython unicodeobject.c handle_capital_sigma), evaluated within [begin, end).
void append_lower(const char32_t* begin, const char32_t* end, std::u32string& out);
// Appends tokenization.py _run_strip_accents of [begin, end): NFD (canonical decomposition and
// canonical ordering), then every Mn (nonspacing mark) dropped.
void append_strip_accents(const char32_t* begin, const char32_t* end, std::u32string& out);

}  // namespace bertrt::unicode
