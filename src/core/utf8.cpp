#include "core/utf8.h"

#include <fmt/format.h>

#include "core/error.h"

namespace bertrt {

size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return k < s.size() && byte(k) >= lo && byte(k) <= hi;
  };
  const unsigned b0 = byte(i);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;  // no overlongs
    const unsigned hi = b0 == 0xED ? 0x9F : 0xBF;  // no surrogates
    return cont(i + 1, lo, hi) && cont(i + 2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;  // no overlongs
    const unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;  // nothing above U+10FFFF
    return cont(i + 1, lo, hi) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

size_t first_invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

size_t drop_utf8_bom(std::string& line) {
  if (line.rfind("\xEF\xBB\xBF", 0) != 0) return 0;
  line.erase(0, 3);
  return 3;
}

bool utf16_bom(std::string_view s) {
  return s.size() >= 2 &&
         ((s[0] == '\xFF' && s[1] == '\xFE') || (s[0] == '\xFE' && s[1] == '\xFF'));
}

void check_utf8_line(std::string_view line, const std::string& path, size_t line_no,
                     size_t skipped) {
  const bool bom = line_no == 1 && utf16_bom(line);
  const size_t nul = line.find('\0');
  if (bom || nul != std::string_view::npos)
    fail(
        "{}: line {}: {}: the text looks like UTF-16, and must be UTF-8 (iconv -f utf-16 -t "
        "utf-8 in > out)",
        path, line_no,
        bom ? std::string("a UTF-16 byte-order mark")
            : fmt::format("byte {} is NUL", skipped + nul + 1));
  const size_t at = first_invalid_utf8(line);
  if (at == std::string_view::npos) return;
  fail(
      "{}: line {}: byte {} (0x{:02X}) is not UTF-8; the text must be UTF-8 (from Latin-1, e.g.: "
      "iconv -f latin1 -t utf-8 in > out)",
      path, line_no, skipped + at + 1, static_cast<unsigned char>(line[at]));
}

void check_utf8_text(std::string_view text, const std::string& what) {
  const size_t at = first_invalid_utf8(text);
  if (at == std::string_view::npos) return;
  fail(
      "{}: byte {} (0x{:02X}) is not UTF-8; the text must be UTF-8 (the tokenizer would drop that "
      "byte and read other words)",
      what, at + 1, static_cast<unsigned char>(text[at]));
}

void check_label_text(std::string_view label, const std::string& what) {
  // Labels are printed one a line or a field (predict, eval): a control character (a tab, a line
  // break, an escape sequence) would forge output; a byte that is not UTF-8 would garble it.
  if (const size_t bad = first_invalid_utf8(label); bad != std::string_view::npos)
    fail("{} has byte {} (0x{:02x}) that is not UTF-8", what, bad,
         static_cast<unsigned char>(label[bad]));
  for (size_t i = 0; i < label.size(); ++i) {
    const auto c = static_cast<unsigned char>(label[i]);
    const bool c0 = c < 0x20 || c == 0x7f;
    const bool c1 = c == 0xc2 && i + 1 < label.size() &&
                    static_cast<unsigned char>(label[i + 1]) < 0xa0;  // U+0080..U+009F
    const bool separator = c == 0xe2 && (label.compare(i, 3, "\xe2\x80\xa8") == 0 ||
                                         label.compare(i, 3, "\xe2\x80\xa9") == 0);
    if (c0 || c1 || separator)
      fail("{} holds a control character at byte {} (0x{:02x}): labels are printed as text", what,
           i, c);
  }
}

}  // namespace bertrt
