// The pre-training corpus reader: lines, blank-line document breaks, invalid UTF-8 dropped,
// sentence splitting, tokenization (a small WordPiece vocab), then the streaming chunk reader over
// the same file in small chunks from the start to the end.
#include "fuzz_target.h"
#include "tokenizer/tokenizer.h"
#include "train/corpus.h"

namespace {

const bertrt::Tokenizer& tokenizer() {
  static const bertrt::Tokenizer tok(
      bertrt::Vocab({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "of", ".", ",", "is",
                     "##s", "##ing", "x", "##x", "mr", "dr", "u"}),
      bertrt::TokenizerOptions{});
  return tok;
}

}  // namespace

BERTRT_FUZZ_TARGET(corpus) {
  if (size == 0) return;
  const uint8_t flags = data[0];
  bertrt::fuzz::MemFile file(data + 1, size - 1);
  bertrt::CorpusOptions options;
  options.min_documents = 1 + (flags & 1);
  options.split_sentences = flags & 2;
  const bertrt::TokenizeFn tokenize = [](const std::string& line) {
    return tokenizer().convert_tokens_to_ids(tokenizer().tokenize(line));
  };
  bertrt::CorpusStats stats;
  try {
    (void)bertrt::read_corpus(file.path(), tokenize, options, &stats);
  } catch (const bertrt::Error&) {
  }
  const std::vector<std::string> files{file.path()};
  bertrt::CorpusCursor at;
  const size_t max_docs = 1 + ((flags >> 2) & 3);
  for (int chunk = 0; chunk < 1000; ++chunk) {
    const bertrt::CorpusChunk c =
        bertrt::read_corpus_chunk(files, at, max_docs, options.min_documents, tokenize, options);
    if (chunk == 0) bertrt::check_corpus_chunk(c, "fuzz corpus", options.min_documents);
    if (c.last) break;
    at = c.next;
  }
}
