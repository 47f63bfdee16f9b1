// BERT tokenization: BasicTokenizer + WordpieceTokenizer (google-research/bert tokenization.py,
// Hugging Face BertTokenizer semantics), and the [CLS] A [SEP] B [SEP] encoding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bertrt {

struct TokenizerOptions {
  bool do_lower_case = true;
  // Hugging Face tri-state: unset follows do_lower_case; true/false force accent stripping.
  std::optional<bool> strip_accents;
  bool tokenize_chinese_chars = true;
  int max_input_chars_per_word = 100;  // longer words become [UNK] (HF default 100)
  std::string unk_token = "[UNK]", sep_token = "[SEP]", pad_token = "[PAD]",
              cls_token = "[CLS]", mask_token = "[MASK]";
};

// WordPiece vocabulary: id = line number (0-based) of vocab.txt.
class Vocab {
 public:
  Vocab() = default;
  explicit Vocab(std::vector<std::string> tokens);
  // Reads one token a line (trailing \r and \n stripped). Throws bertrt::Error naming the file when
  // it cannot be read, is empty, or lacks any of [PAD] [UNK] [CLS] [SEP] [MASK].
  static Vocab load(const std::string& path);
  // vocab.txt's tokens, one a line (trailing \r and \n stripped, a leading byte-order mark
  // dropped), without the special-token check of load: the converter's reader too.
  static std::vector<std::string> read_tokens(const std::string& path);
  int size() const { return static_cast<int>(tokens_.size()); }
  // -1 when absent.
  int32_t find(const std::string& token) const;
  const std::string& token(int32_t id) const { return tokens_.at(id); }
  const std::vector<std::string>& tokens() const { return tokens_; }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> ids_;
};

// One encoded example. All vectors have the same length (padded to max_seq_length when asked).
struct Encoding {
  std::vector<std::string> tokens;
  std::vector<int32_t> input_ids;
  std::vector<int32_t> token_type_ids;
  std::vector<int32_t> attention_mask;
};

// Python's str.lower() of UTF-8 text (what sentence-transformers' do_lower_case applies before
// the tokenizer); malformed bytes are dropped.
std::string lower_text(std::string_view text);

class Tokenizer {
 public:
  // Throws bertrt::Error when a special token of `options` is missing from the vocab.
  Tokenizer(Vocab vocab, TokenizerOptions options);

  const Vocab& vocab() const { return vocab_; }
  const TokenizerOptions& options() const { return options_; }
  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  int32_t mask_id() const { return mask_id_; }

  // Basic step: clean text (drop NUL, U+FFFD, control chars; whitespace → space), split on
  // whitespace, keep the special tokens whole (matched before lower-casing), lower-case and strip
  // accents (NFD, drop Mn) as configured, split punctuation, surround CJK ideographs with spaces.
  std::vector<std::string> basic_tokenize(const std::string& text) const;
  // WordPiece: greedy longest-match-first with "##" continuations; a word longer than
  // max_input_chars_per_word (in code points) or with no match becomes [UNK].
  std::vector<std::string> wordpiece_tokenize(const std::string& word) const;
  // basic_tokenize then wordpiece_tokenize each token.
  std::vector<std::string> tokenize(const std::string& text) const;
  std::vector<int32_t> convert_tokens_to_ids(const std::vector<std::string>& tokens) const;

  // [CLS] A [SEP] (B [SEP]); token_type_ids 0 for [CLS] A [SEP], 1 for B [SEP]. When
  // max_seq_length > 0 the pair is truncated longest-first (HF "longest_first": remove one token
  // from the longer of A and B, B on ties, until it fits) and, if pad, padded with [PAD] and
  // attention_mask 0. max_seq_length must be ≥ 3 (pairs) or ≥ 2 (single); throws otherwise.
  Encoding encode(const std::string& text_a, const std::optional<std::string>& text_b,
                  int max_seq_length = 0, bool pad = false) const;
  // The same from already-tokenized WordPiece ids.
  Encoding encode_ids(std::vector<int32_t> ids_a, std::optional<std::vector<int32_t>> ids_b,
                      int max_seq_length = 0, bool pad = false) const;

 private:
  Vocab vocab_;
  TokenizerOptions options_;
  int32_t cls_id_ = -1, sep_id_ = -1, pad_id_ = -1, unk_id_ = -1, mask_id_ = -1;
};

}  // namespace bertrt
