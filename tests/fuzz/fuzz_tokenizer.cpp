// vocab.txt + the BERT tokenizer on arbitrary bytes (invalid UTF-8, NULs, control characters, huge
// words). Input: one flags byte, then either "VOCAB\0TEXT" (a vocab.txt read by Vocab::load) or,
// with no NUL, TEXT alone against a small built-in vocab. Checks the documented invariants:
// tokenize_with_offsets gives the pieces of tokenize with in-bounds, non-overlapping byte ranges,
// and encode's vectors have one length, within max_seq_length.
#include <cstring>
#include <stdexcept>

#include "fuzz_target.h"
#include "tokenizer/offsets.h"
#include "tokenizer/tokenizer.h"

namespace {

const char kVocab[] =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nof\nand\na\n##s\n##ing\n##ed\nun\n##aff\n##able\n"
    "want\n##want\nrun\n,\n.\n!\n?\n\"\n'\ne\n##e\ni\n##i\n\xe4\xb8\xad\n\xe6\x96\x87\ncafe\n"
    "\xc3\xa9\n##\xcc\x81\nhello\n##llo\nh\n##o\nx\n##x\n";

void check(bool ok, const char* what) {
  if (!ok) throw std::logic_error(what);  // not a bertrt::Error: the fuzzer reports it
}

}  // namespace

BERTRT_FUZZ_TARGET(tokenizer) {
  if (size == 0) return;
  const uint8_t flags = data[0];
  ++data, --size;
  const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  bertrt::Vocab vocab;
  std::string text;
  if (nul) {
    bertrt::fuzz::MemFile file(data, size_t(nul - data));
    vocab = bertrt::Vocab::load(file.path());
    text.assign(reinterpret_cast<const char*>(nul + 1), size - size_t(nul - data) - 1);
  } else {
    bertrt::fuzz::MemFile file(reinterpret_cast<const uint8_t*>(kVocab), sizeof kVocab - 1);
    vocab = bertrt::Vocab::load(file.path());
    text.assign(reinterpret_cast<const char*>(data), size);
  }
  bertrt::TokenizerOptions options;
  options.do_lower_case = flags & 1;
  if (flags & 2) options.strip_accents = bool(flags & 4);
  options.tokenize_chinese_chars = !(flags & 8);
  if (flags >> 4) options.max_input_chars_per_word = flags >> 4;
  const bertrt::Tokenizer tok(std::move(vocab), options);

  const std::vector<std::string> pieces = tok.tokenize(text);
  const std::vector<bertrt::TokenSpan> spans = bertrt::tokenize_with_offsets(tok, text);
  check(spans.size() == pieces.size(), "tokenize_with_offsets: piece count differs from tokenize");
  size_t prev_end = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    check(spans[i].token == pieces[i], "tokenize_with_offsets: piece differs from tokenize");
    check(spans[i].begin <= spans[i].end && spans[i].end <= text.size(),
          "tokenize_with_offsets: range outside the text");
    check(spans[i].begin >= prev_end, "tokenize_with_offsets: ranges overlap");
    prev_end = spans[i].end;
  }
  (void)tok.convert_tokens_to_ids(pieces);

  const size_t tab = text.find('\t');
  const int max_len = 3 + (flags & 0x70);
  const bertrt::Encoding e =
      tab == std::string::npos
          ? tok.encode(text, std::nullopt, max_len, flags & 0x80)
          : tok.encode(text.substr(0, tab), text.substr(tab + 1), max_len, flags & 0x80);
  check(e.tokens.size() == e.input_ids.size() && e.input_ids.size() == e.token_type_ids.size() &&
            e.input_ids.size() == e.attention_mask.size(),
        "encode: vectors of different lengths");
  check(e.input_ids.size() <= size_t(max_len), "encode: longer than max_seq_length");
}
