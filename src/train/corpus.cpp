#include "train/corpus.h"

#include <utf8proc.h>

#include <filesystem>
#include <fstream>
#include <system_error>

#include "core/error.h"
#include "train/sentence_split.h"

namespace bertrt {

namespace {

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when it is ill-formed
// (Unicode 14.0, Table 3-7).
size_t utf8_sequence_length(const std::string& s, size_t i) {
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

// Python's str.isspace (what line.strip() removes): category Zs or bidi class B, S or WS.
bool is_python_space(utf8proc_int32_t cp) {
  const utf8proc_property_t* p = utf8proc_get_property(cp);
  return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_B ||
         p->bidi_class == UTF8PROC_BIDI_CLASS_S || p->bidi_class == UTF8PROC_BIDI_CLASS_WS;
}

// True when the (valid UTF-8) line is empty after Python's strip(): a document boundary.
bool is_blank(const std::string& line) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(line.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(line.size());
  while (left > 0) {
    utf8proc_int32_t cp;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0 || !is_python_space(cp)) return false;
    p += n;
    left -= n;
  }
  return true;
}

}  // namespace

size_t drop_invalid_utf8(std::string& text) {
  size_t out = 0, dropped = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) {  // drop one byte and resynchronise, as Python's "ignore" handler does
      ++dropped;
      ++i;
      continue;
    }
    for (size_t k = 0; k < n; ++k) text[out++] = text[i + k];
    i += n;
  }
  text.resize(out);
  return dropped;
}

Documents read_corpus(const std::string& path, const TokenizeFn& tokenize,
                      const CorpusOptions& options, CorpusStats* stats) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("{}: corpus file not found", path);
  if (fs::is_directory(path, ec)) fail("{}: is a directory, expected a text file", path);
  const size_t total = static_cast<size_t>(fs::file_size(path, ec));
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open corpus file for reading", path);

  CorpusStats st;
  Documents docs(1);  // the reference starts with one open document
  std::string line;
  size_t bytes = 0, next_report = 0, nonblank_lines = 0;
  constexpr size_t kReportEvery = 256 * 1024;
  while (std::getline(in, line)) {
    bytes += line.size() + (in.eof() ? 0 : 1);
    ++st.lines;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF files
    if (drop_invalid_utf8(line) > 0) {
      if (st.invalid_utf8_lines++ == 0) st.first_invalid_utf8_line = st.lines;
    }
    if (is_blank(line)) {
      if (!docs.back().empty()) docs.emplace_back();
    } else {
      ++nonblank_lines;
      auto add = [&](const std::string& text) {
        std::vector<int32_t> ids = tokenize(text);
        if (ids.empty()) return;
        st.tokens += ids.size();
        docs.back().push_back(std::move(ids));
      };
      if (options.split_sentences) {
        for (std::string_view sentence : split_sentences(line)) add(std::string(sentence));
      } else {
        add(line);
      }
    }
    if (options.progress && bytes >= next_report) {
      options.progress(bytes, total);
      next_report = bytes + kReportEvery;
    }
  }
  if (in.bad()) fail("{}: read error after line {}", path, st.lines);
  if (options.progress) options.progress(bytes, total);
  if (docs.back().empty()) docs.pop_back();

  st.bytes = bytes;
  st.documents = docs.size();
  if (stats) *stats = st;
  if (nonblank_lines == 0) fail("{}: corpus is empty (no non-blank line)", path);
  if (st.tokens == 0)
    fail("{}: corpus yields no tokens ({} non-blank lines, all dropped by the tokenizer)", path,
         nonblank_lines);
  if (docs.size() < options.min_documents)
    fail(
        "{}: {} document(s), need at least {}: next-sentence prediction draws the random "
        "segment from another document (separate documents with a blank line)",
        path, docs.size(), options.min_documents);
  return docs;
}

}  // namespace bertrt
