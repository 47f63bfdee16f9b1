// Well-formed UTF-8 (Unicode 14.0, Table 3-7: no overlongs, no surrogates, nothing past
// U+10FFFF), byte by byte: for the readers of text files, which must find the bytes that are not
// UTF-8 before the tokenizer drops them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace bertrt {

// Length of the well-formed sequence starting at s[i] (1 to 4), or 0 when it is ill-formed.
size_t utf8_sequence_length(std::string_view s, size_t i);
// Offset of the first byte of s that starts no well-formed sequence, or npos when s is UTF-8.
size_t first_invalid_utf8(std::string_view s);
// Drops a UTF-8 byte-order mark (EF BB BF) from the start of a file's first line; returns the
// bytes dropped, 3 or 0 (check_utf8_line's `skipped`).
size_t drop_utf8_bom(std::string& line);
// True when s starts with a UTF-16 byte-order mark (FF FE or FE FF).
bool utf16_bom(std::string_view s);
// Throws bertrt::Error naming the file, the line, the byte and how to convert the file when a
// line of text input is not UTF-8: the tokenizer would drop those bytes and change the text (as
// Python's open() raises on them, where run_glue.py reads its files). A NUL, or a UTF-16
// byte-order mark on line 1 (after a UTF-8 one is dropped), is named as UTF-16. skipped: bytes
// the reader dropped from the line's start (a UTF-8 BOM), so that byte numbers count the file's.
void check_utf8_line(std::string_view line, const std::string& path, size_t line_no,
                     size_t skipped = 0);
// Throws bertrt::Error "<what>: byte N (0xXX) is not UTF-8; ..." when a text given whole (a
// command-line argument, a C API string) is not UTF-8, for the same reason.
void check_utf8_text(std::string_view text, const std::string& what);

// Throws bertrt::Error "<what> ..." when a label (a class name, a column name: text printed as a
// field of the output) is not UTF-8 or holds a control character (C0, DEL, C1, U+2028/U+2029
// line and paragraph separators): a tab or line break would forge output lines, an escape
// sequence would drive the terminal.
void check_label_text(std::string_view label, const std::string& what);

}  // namespace bertrt
