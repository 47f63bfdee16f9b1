// Character classes and case/accent transformations for the BERT tokenizer (see unicode_text.h).
// Categories come from utf8proc; the rules are google-research/bert tokenization.py and CPython's
// str methods. Verified exhaustively over all code points against Python 3.11 (unicodedata 14.0),
// see tests/reference/unicode_classes_check.py.
#include "tokenizer/unicode_text.h"

#include <utf8proc.h>

#include <algorithm>
#include <iterator>

namespace bertrt::unicode {
namespace {

utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

// Word_Break MidLetter, MidNumLet and Single_Quote (WordBreakProperty.txt, Unicode 14): with the
// categories below they make up Case_Ignorable (Unicode 14 section 3.13, D136).
bool is_word_break_mid(char32_t c) {
  static constexpr char32_t kMid[] = {0x0027, 0x002E, 0x003A, 0x00B7, 0x0387, 0x055F,
                                      0x05F4, 0x2018, 0x2019, 0x2024, 0x2027, 0xFE13,
                                      0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
  return std::binary_search(std::begin(kMid), std::end(kMid), c);
}

bool is_case_ignorable(char32_t c) {
  switch (category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      return is_word_break_mid(c);
  }
}

// Cased (D135): Lowercase or Uppercase property, or Lt. Letters with a case mapping cover nearly
// all of it; the rest are Other_Lowercase / Other_Uppercase code points without a mapping
// (PropList.txt) that are not case-ignorable (for those, Final_Sigma never asks).
bool is_cased(char32_t c) {
  const auto cat = category(c);
  if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT)
    return true;
  const auto u = static_cast<utf8proc_int32_t>(c);
  if (utf8proc_tolower(u) != u || utf8proc_toupper(u) != u) return true;
  return c == 0x00AA || c == 0x00BA || (c >= 0x1F130 && c <= 0x1F149) ||
         (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
}

// CPython unicodeobject.c handle_capital_sigma: U+03A3 at `at` lowers to final sigma when
// preceded by a cased letter and not followed by one (case-ignorable characters skipped).
bool is_final_sigma(const char32_t* begin, const char32_t* end, const char32_t* at) {
  const char32_t* p = at;
  while (p != begin && is_case_ignorable(p[-1])) --p;
  if (p == begin || !is_cased(p[-1])) return false;
  const char32_t* q = at + 1;
  while (q != end && is_case_ignorable(*q)) ++q;
  return q == end || !is_cased(*q);
}

int combining_class(char32_t c) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
}

}  // namespace

void decode_utf8(std::string_view s, std::u32string& out) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char lead = b[i];
    if (lead < 0x80) {
      out.push_back(lead);
      ++i;
      continue;
    }
    size_t len;
    char32_t cp, min;
    if (lead >= 0xC2 && lead <= 0xDF) {
      len = 2, cp = lead & 0x1F, min = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      len = 3, cp = lead & 0x0F, min = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      len = 4, cp = lead & 0x07, min = 0x10000;
    } else {
      ++i;  // continuation byte or invalid lead: dropped
      continue;
    }
    bool ok = i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (b[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (b[i + k] & 0x3F);
    }
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      // Drop the lead byte only; the continuation bytes after it are dropped one by one, which
      // gives the same text as Python's maximal-subpart rule since they cannot start a character.
      ++i;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

bool is_whitespace(char32_t c) {
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return true;
  if (c < 0x80) return false;
  return category(c) == UTF8PROC_CATEGORY_ZS;
}

bool is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  if (c < 0x80) return c < 0x20 || c == 0x7F;
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF;
}

bool is_punctuation(char32_t c) {
  // BERT treats all non-letter/number ASCII as punctuation ("^", "$", "`" are not P* in Unicode).
  if (c < 0x80)
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
           (c >= 123 && c <= 126);
  switch (category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_python_space(char32_t c) {
  // CPython _PyUnicode_IsWhitespace: bidirectional class WS, B or S, or category Zs.
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

void append_lower(const char32_t* begin, const char32_t* end, std::u32string& out) {
  for (const char32_t* p = begin; p != end; ++p) {
    const char32_t c = *p;
    if (c < 0x80) {
      out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else if (c == 0x0130) {  // the only unconditional multi-character lowercase mapping
      out.push_back(U'i');
      out.push_back(0x0307);
    } else if (c == 0x03A3) {
      out.push_back(is_final_sigma(begin, end, p) ? 0x03C2 : 0x03C3);
    } else {
      out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
  }
}

void append_strip_accents(const char32_t* begin, const char32_t* end, std::u32string& out) {
  const size_t start = out.size();
  for (const char32_t* p = begin; p != end; ++p) {
    if (*p < 0x80) {  // ASCII has no decomposition and no marks
      out.push_back(*p);
      continue;
    }
    utf8proc_int32_t buf[16];
    int boundclass = 0;
    const auto n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(*p), buf, 16,
                                           UTF8PROC_DECOMPOSE, &boundclass);
    for (utf8proc_ssize_t k = 0; k < n && k < 16; ++k) out.push_back(static_cast<char32_t>(buf[k]));
  }
  // Canonical ordering (insertion sort of each run of non-starters by combining class), so that
  // the marks that are not Mn keep NFD's order.
  for (size_t i = start + 1; i < out.size(); ++i) {
    for (size_t j = i; j > start; --j) {
      if (out[j] < 0x300) break;  // below the first combining mark: a starter
      const int cj = combining_class(out[j]);
      if (cj == 0 || combining_class(out[j - 1]) <= cj) break;
      std::swap(out[j - 1], out[j]);
    }
  }
  out.erase(
      std::remove_if(out.begin() + static_cast<std::ptrdiff_t>(start), out.end(),
                     [](char32_t c) { return c >= 0x80 && category(c) == UTF8PROC_CATEGORY_MN; }),
      out.end());
}

}  // namespace bertrt::unicode
