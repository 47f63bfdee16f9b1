// A plain-text pre-training corpus read into WordPiece ids, in the input format of
// google-research/bert create_pretraining_data.py: one sentence (or paragraph) a line, a blank
// line between documents.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace bertrt {

// documents[d][l] = WordPiece ids of line l of document d. No document and no line is empty.
using Documents = std::vector<std::vector<std::vector<int32_t>>>;

// Text of one line → its WordPiece ids (empty when the line holds no token).
using TokenizeFn = std::function<std::vector<int32_t>(const std::string& line)>;
// Called with bytes read so far and the file size, about every 256 KiB and once at the end.
using ProgressFn = std::function<void(size_t bytes_done, size_t bytes_total)>;

struct CorpusOptions {
  // Fewer non-empty documents than this is an error. Use 2 for NSP: the "random next" segment must
  // come from another document (create_instances_from_document).
  size_t min_documents = 1;
  ProgressFn progress;  // optional
  // Split each line into sentences first (train/sentence_split.h): the recipe expects a sentence
  // a line; paragraph-a-line corpora otherwise skew NSP towards "random next".
  bool split_sentences = false;
};

struct CorpusStats {
  size_t bytes = 0, lines = 0, documents = 0, tokens = 0;
  size_t nonblank_lines = 0;
  // Lines holding bytes that are not valid UTF-8. Those bytes are dropped, as the reference does
  // (tokenization.convert_to_unicode: bytes.decode("utf-8", "ignore")); callers may warn.
  size_t invalid_utf8_lines = 0;
  size_t first_invalid_utf8_line = 0;   // 1-based; 0 when none
  std::string first_invalid_utf8_file;  // the file holding that line
};

// Reads `path` and tokenizes every line. As in the reference: a line that is blank after stripping
// white space ends the current document; a line with no token is skipped; empty documents are
// dropped. Throws bertrt::Error naming the file when it is missing or unreadable, holds no
// non-blank line, yields no token, or yields fewer than options.min_documents documents.
Documents read_corpus(const std::string& path, const TokenizeFn& tokenize,
                      const CorpusOptions& options = {}, CorpusStats* stats = nullptr);

// The same with a BERT tokenizer (basic + WordPiece, then ids).
inline Documents read_corpus(const std::string& path, const Tokenizer& tokenizer,
                             const CorpusOptions& options = {}, CorpusStats* stats = nullptr) {
  return read_corpus(
      path,
      [&tokenizer](const std::string& line) {
        return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line));
      },
      options, stats);
}

// --------------------------------------------------------------- streaming over many files ------
//
// A corpus may be larger than memory: it is read a chunk of documents at a time. The end of a
// file also ends a document (the reference would join a last document without a trailing blank
// line to the first one of the next file; we treat each file as self-contained).

// Expands --corpus arguments: a file stays as given; a folder gives every regular file directly
// inside it whose name ends in ".txt", sorted by name. Throws bertrt::Error naming the path when
// it does not exist, is neither a file nor a folder, or is a folder without a .txt file.
std::vector<std::string> expand_corpus_paths(const std::vector<std::string>& paths);

// Where reading resumes in a list of corpus files.
struct CorpusCursor {
  uint64_t file = 0;    // index into the file list; == files.size() means "past the end"
  uint64_t offset = 0;  // byte offset of the next line in that file
  uint64_t line = 1;    // its 1-based line number (for messages only)
  bool operator==(const CorpusCursor& o) const { return file == o.file && offset == o.offset; }
};

struct CorpusChunk {
  Documents documents;
  CorpusCursor next;  // where the following chunk starts ({0, 0, 1} after the last one)
  bool last = false;  // this chunk reaches the end of the last file
  CorpusStats stats;  // of every line read, the look-ahead included
};

// Reads whole documents from `files` starting at `from` (a cursor returned by an earlier call, or
// {} for the start): `max_documents` of them, and all that are left when fewer than
// `min_documents` would remain after them (so no later chunk is too small for NSP, which needs
// another document). Lines are read, cleaned and tokenized as by read_corpus. Memory: at most
// max_documents + min_documents documents. Throws bertrt::Error naming the file on a read error.
CorpusChunk read_corpus_chunk(const std::vector<std::string>& files, const CorpusCursor& from,
                              size_t max_documents, size_t min_documents,
                              const TokenizeFn& tokenize, const CorpusOptions& options = {});

// The errors of read_corpus for a chunk that began at the start of the data (`what` names the
// files): no non-blank line, no token, fewer than min_documents documents.
void check_corpus_chunk(const CorpusChunk& chunk, const std::string& what, size_t min_documents);

// "a.txt", "a.txt, b.txt" or "a.txt and 11 more files": for messages about a list of files.
std::string describe_files(const std::vector<std::string>& files);

// Drops the bytes of `text` that are not well-formed UTF-8 (Unicode Table 3-7: no overlongs, no
// surrogates, nothing above U+10FFFF), like Python's decode("utf-8", "ignore"). Returns the number
// of bytes dropped.
size_t drop_invalid_utf8(std::string& text);

}  // namespace bertrt
