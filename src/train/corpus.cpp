#include "train/corpus.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "core/error.h"
#include "core/utf8.h"
#include "train/sentence_split.h"

namespace bertrt {

namespace {

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

std::vector<std::string> expand_corpus_paths(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!fs::exists(p, ec)) fail("{}: corpus file or folder not found", p);
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> inside;
      for (const auto& e : fs::directory_iterator(p, ec))
        if (e.is_regular_file() && e.path().extension() == ".txt")
          inside.push_back(e.path().string());
      if (ec) fail("{}: cannot list the folder: {}", p, ec.message());
      if (inside.empty()) fail("{}: folder holds no .txt file", p);
      std::sort(inside.begin(), inside.end());
      files.insert(files.end(), inside.begin(), inside.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      fail("{}: not a regular file or folder", p);
    }
  }
  if (files.empty()) fail("no corpus file given");
  return files;
}

std::string describe_files(const std::vector<std::string>& files) {
  if (files.empty()) return "(no file)";
  if (files.size() == 1) return files[0];
  if (files.size() == 2) return files[0] + ", " + files[1];
  return fmt::format("{} and {} more files", files[0], files.size() - 1);
}

CorpusChunk read_corpus_chunk(const std::vector<std::string>& files, const CorpusCursor& from,
                              size_t max_documents, size_t min_documents,
                              const TokenizeFn& tokenize, const CorpusOptions& options) {
  namespace fs = std::filesystem;
  if (max_documents < 1) fail("corpus chunk: max_documents must be ≥ 1");
  min_documents = std::max<size_t>(min_documents, 1);
  // Read until `want` documents are complete: the chunk's own and the look-ahead that proves
  // enough documents are left for the next chunk.
  const size_t want =
      max_documents > SIZE_MAX - min_documents ? SIZE_MAX : max_documents + min_documents;

  size_t total = 0;  // bytes left from `from` (for progress)
  for (size_t f = from.file; f < files.size(); ++f) {
    std::error_code ec;
    const auto size = fs::file_size(files[f], ec);
    if (!ec) total += static_cast<size_t>(size) - (f == from.file ? from.offset : 0);
  }

  CorpusChunk c;
  CorpusStats& st = c.stats;
  Documents docs;
  std::vector<CorpusCursor> after;  // after[k]: where reading resumes after document k
  std::vector<std::vector<int32_t>> current;
  CorpusCursor pos = from;
  auto end_document = [&](const CorpusCursor& resume) {
    if (current.empty()) return;
    docs.push_back(std::move(current));
    current.clear();
    after.push_back(resume);
  };
  auto add_text = [&](const std::string& text) {
    std::vector<int32_t> ids = tokenize(text);
    if (ids.empty()) return;
    st.tokens += ids.size();
    current.push_back(std::move(ids));
  };

  constexpr size_t kReportEvery = 256 * 1024;
  size_t next_report = 0;
  std::string line;
  for (size_t f = from.file; f < files.size() && docs.size() < want; ++f) {
    const std::string& path = files[f];
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open corpus file for reading", path);
    pos = f == from.file ? from : CorpusCursor{f, 0, 1};
    if (pos.offset > 0 && !in.seekg(static_cast<std::streamoff>(pos.offset)))
      fail("{}: cannot seek to byte {} (did the file shrink?)", path, pos.offset);
    while (docs.size() < want && std::getline(in, line)) {
      const size_t n = line.size() + (in.eof() ? 0 : 1);
      st.bytes += n;
      pos.offset += n;
      ++pos.line;
      ++st.lines;
      if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF files
      // Text never holds a NUL; a model file or archive passed as --corpus would otherwise train
      // on its bytes' valid UTF-8 runs.
      if (line.find('\0') != std::string::npos)
        fail("{}: line {} holds a NUL byte: expected a text file (one sentence or paragraph per "
             "line, blank lines between documents), not a binary one", path, pos.line - 1);
      if (drop_invalid_utf8(line) > 0) {
        if (st.invalid_utf8_lines++ == 0) {
          st.first_invalid_utf8_line = pos.line - 1;
          st.first_invalid_utf8_file = path;
        }
      }
      if (is_blank(line)) {
        end_document(pos);  // a blank line ends the document (create_training_instances)
      } else {
        ++st.nonblank_lines;
        if (options.split_sentences) {
          for (std::string_view sentence : split_sentences(line)) add_text(std::string(sentence));
        } else {
          add_text(line);
        }
      }
      if (options.progress && st.bytes >= next_report) {
        options.progress(st.bytes, total);
        next_report = st.bytes + kReportEvery;
      }
    }
    if (in.bad()) fail("{}: read error after line {}", path, pos.line - 1);
    if (docs.size() < want) end_document(CorpusCursor{f + 1, 0, 1});  // end of file ends it
  }
  if (options.progress) options.progress(st.bytes, total);

  if (docs.size() >= want) {  // enough left after the chunk's own documents
    docs.resize(max_documents);
    c.next = after[max_documents - 1];
    c.last = c.next.file >= files.size();
  } else {
    c.last = true;
  }
  if (c.last) c.next = CorpusCursor{};
  st.documents = docs.size();
  c.documents = std::move(docs);
  return c;
}

Documents read_corpus(const std::string& path, const TokenizeFn& tokenize,
                      const CorpusOptions& options, CorpusStats* stats) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("{}: corpus file not found", path);
  if (fs::is_directory(path, ec)) fail("{}: is a directory, expected a text file", path);
  CorpusChunk c = read_corpus_chunk({path}, CorpusCursor{}, SIZE_MAX, 1, tokenize, options);
  if (stats) *stats = c.stats;
  check_corpus_chunk(c, path, options.min_documents);
  return std::move(c.documents);
}

void check_corpus_chunk(const CorpusChunk& c, const std::string& what, size_t min_documents) {
  const CorpusStats& st = c.stats;
  if (st.nonblank_lines == 0) fail("{}: corpus is empty (no non-blank line)", what);
  if (st.tokens == 0)
    fail("{}: corpus yields no tokens ({} non-blank lines, all dropped by the tokenizer)", what,
         st.nonblank_lines);
  if (c.documents.size() < min_documents)
    fail(
        "{}: {} document(s), need at least {}: next-sentence prediction draws the random "
        "segment from another document (separate documents with a blank line)",
        what, c.documents.size(), min_documents);
}

}  // namespace bertrt
