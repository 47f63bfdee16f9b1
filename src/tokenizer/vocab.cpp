// WordPiece vocabulary: one token a line, id = 0-based line number (BERT vocab.txt).
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/tokenizer.h"

namespace bertrt {

Vocab::Vocab(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {
  ids_.reserve(tokens_.size());
  // A duplicated token maps to its last line, as tokenization.py load_vocab's dict assignment does.
  for (size_t i = 0; i < tokens_.size(); ++i) ids_[tokens_[i]] = static_cast<int32_t>(i);
}

std::vector<std::string> Vocab::read_tokens(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("vocab {}: cannot open file", path);
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
    // A byte-order mark (an editor's, on Windows) is not part of the first token: with it,
    // "[PAD]" went missing. The TSV readers drop it the same way.
    if (tokens.empty()) drop_utf8_bom(line);
    tokens.push_back(line);
  }
  if (in.bad()) fail("vocab {}: read error after line {}", path, tokens.size());
  if (tokens.empty()) fail("vocab {}: file is empty (expected one WordPiece token a line)", path);
  return tokens;
}

Vocab Vocab::load(const std::string& path) {
  std::vector<std::string> tokens = read_tokens(path);
  Vocab vocab(std::move(tokens));
  std::string missing;
  for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    if (vocab.find(special) < 0) missing += std::string(missing.empty() ? "" : " ") + special;
  }
  if (!missing.empty())
    fail(
        "vocab {}: missing special token(s) {} ({} tokens read; BERT needs [PAD] [UNK] [CLS] "
        "[SEP] [MASK])",
        path, missing, vocab.size());
  return vocab;
}

int32_t Vocab::find(const std::string& token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

}  // namespace bertrt
