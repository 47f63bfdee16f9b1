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
  // Lines holding bytes that are not valid UTF-8. Those bytes are dropped, as the reference does
  // (tokenization.convert_to_unicode: bytes.decode("utf-8", "ignore")); callers may warn.
  size_t invalid_utf8_lines = 0;
  size_t first_invalid_utf8_line = 0;  // 1-based; 0 when none
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

// Drops the bytes of `text` that are not well-formed UTF-8 (Unicode Table 3-7: no overlongs, no
// surrogates, nothing above U+10FFFF), like Python's decode("utf-8", "ignore"). Returns the number
// of bytes dropped.
size_t drop_invalid_utf8(std::string& text);

}  // namespace bertrt
