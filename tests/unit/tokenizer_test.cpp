// BERT tokenizer: the shared reference cases (google-research/bert tokenization.py outputs), the
// character rules against Python's unicodedata, the real bert-base-uncased vocab (ids checked
// against vocab.txt line numbers, and SST-2 dev against tests/reference/bert_tokenizer_ref.py),
// the [CLS] A [SEP] B [SEP] encoding, and vocab errors.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "test_util.h"
#include "tokenizer/unicode_text.h"

namespace bertrt {
namespace {

const std::vector<std::string> kSpecials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

std::string join(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", '" : "'") + v[i] + "'";
  return s + "]";
}

// A case's vocab plus whichever special tokens it lacks (the Tokenizer requires them). Appending
// cannot change a case's pieces: a basic token never contains '[' unless it is a special token.
Vocab case_vocab(const nlohmann::json& c) {
  std::vector<std::string> tokens;
  if (c.contains("vocab")) tokens = c["vocab"].get<std::vector<std::string>>();
  for (const std::string& s : kSpecials) {
    if (std::find(tokens.begin(), tokens.end(), s) == tokens.end()) tokens.push_back(s);
  }
  return Vocab(tokens);
}

TEST(Tokenizer, SharedReferenceCases) {
  const std::string path = test::shared_dir() + "/tests/tokenizer_cases.json";
  BERTRT_REQUIRE_PATH(path);
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  const auto& cases = doc.at("cases");
  ASSERT_GT(cases.size(), 0u);
  size_t ran = 0, wordpiece_checked = 0;
  std::string failures;
  for (const auto& c : cases) {
    const std::string id = c.at("id");
    TokenizerOptions options;
    options.do_lower_case = c.at("do_lower_case");
    if (c.contains("strip_accents") && !c["strip_accents"].is_null())
      options.strip_accents = c["strip_accents"].get<bool>();
    if (c.contains("max_input_chars_per_word"))
      options.max_input_chars_per_word = c["max_input_chars_per_word"];
    const Tokenizer tok(case_vocab(c), options);
    const std::string text = c.at("text");

    const auto basic = tok.basic_tokenize(text);
    const auto want_basic = c.at("basic_tokens").get<std::vector<std::string>>();
    if (basic != want_basic)
      failures += id + " basic: expected " + join(want_basic) + " got " + join(basic) + "\n";
    if (c.contains("wordpiece_tokens")) {
      const auto pieces = tok.tokenize(text);
      const auto want = c["wordpiece_tokens"].get<std::vector<std::string>>();
      if (pieces != want)
        failures += id + " wordpiece: expected " + join(want) + " got " + join(pieces) + "\n";
      ++wordpiece_checked;
    }
    ++ran;
  }
  EXPECT_TRUE(failures.empty()) << failures;
  EXPECT_EQ(ran, cases.size());
  EXPECT_GT(wordpiece_checked, 0u);
}

// One line of tests/reference/tokenizer_unicode_table.py.
struct CharRef {
  std::string flags = "-", lower = "-", strip = "-", sigma = "110";
};

std::string hex_join(const std::u32string& s) {
  std::string out;
  char buf[16];
  for (char32_t c : s) {
    std::snprintf(buf, sizeof buf, "%s%x", out.empty() ? "" : ".", static_cast<unsigned>(c));
    out += buf;
  }
  return out.empty() ? "_" : out;  // as the reference writes the empty string
}

std::u32string lower(const std::u32string& s) {
  std::u32string out;
  unicode::append_lower(s.data(), s.data() + s.size(), out);
  return out;
}

// Every code point assigned in the Python reference's Unicode version gets the same answers from
// the C++ rules: whitespace/control/punctuation classes, str.isspace, str.lower (Final_Sigma
// context included) and strip-accents.
TEST(Tokenizer, UnicodeRulesMatchPython) {
  const std::string table = test::build_dir() + "/tokenizer_unicode_table.txt";
  const std::string cmd =
      "python3 " + test::source_dir() + "/tests/reference/tokenizer_unicode_table.py > " + table;
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "python3 reference unavailable: " << cmd;
  std::ifstream in(table);
  std::map<char32_t, CharRef> refs;
  std::vector<std::pair<char32_t, char32_t>> unassigned;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    if (line[0] == 'U') {
      std::string u;
      unsigned first, last;
      ls >> u >> std::hex >> first >> last;
      unassigned.emplace_back(first, last);
      continue;
    }
    unsigned cp;
    CharRef r;
    ls >> std::hex >> cp >> r.flags >> r.lower >> r.strip >> r.sigma;
    refs[cp] = r;
  }
  ASSERT_GT(refs.size(), 1000u);

  size_t next_gap = 0, checked = 0, mismatches = 0;
  std::string report;
  for (char32_t c = 0; c < 0x110000; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    while (next_gap < unassigned.size() && unassigned[next_gap].second < c) ++next_gap;
    if (next_gap < unassigned.size() && unassigned[next_gap].first <= c) continue;
    CharRef got;
    std::string flags;
    flags += unicode::is_whitespace(c) ? "W" : "";
    flags += unicode::is_control(c) ? "C" : "";
    flags += unicode::is_punctuation(c) ? "P" : "";
    flags += unicode::is_python_space(c) ? "S" : "";
    if (!flags.empty()) got.flags = flags;
    const std::u32string one(1, c);
    if (lower(one) != one) got.lower = hex_join(lower(one));
    std::u32string stripped;
    unicode::append_strip_accents(&c, &c + 1, stripped);
    if (stripped != one) got.strip = hex_join(stripped);
    got.sigma.clear();
    for (const std::u32string& s : {std::u32string(U"A\u03a3") + c + U"B", U"A\u03a3" + one}) {
      got.sigma += lower(s)[1] == 0x03C2 ? "1" : "0";
    }
    got.sigma += lower(one + U"\u03a3").back() == 0x03C2 ? "1" : "0";

    const auto it = refs.find(c);
    const CharRef want = it == refs.end() ? CharRef{} : it->second;
    ++checked;
    if (got.flags != want.flags || got.lower != want.lower || got.strip != want.strip ||
        got.sigma != want.sigma) {
      if (++mismatches <= 20) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "U+%04X want %s %s %s %s got %s %s %s %s\n",
                      static_cast<unsigned>(c), want.flags.c_str(), want.lower.c_str(),
                      want.strip.c_str(), want.sigma.c_str(), got.flags.c_str(), got.lower.c_str(),
                      got.strip.c_str(), got.sigma.c_str());
        report += buf;
      }
    }
  }
  EXPECT_EQ(mismatches, 0u) << report;
  EXPECT_GT(checked, 100000u);
}

TEST(Tokenizer, SpecialTokensNeverSplitAndCaseSensitive) {
  const Tokenizer tok(Vocab(kSpecials), TokenizerOptions{});
  EXPECT_EQ(tok.basic_tokenize("[CLS]Hello[MASK]. [SEP]"),
            (std::vector<std::string>{"[CLS]", "hello", "[MASK]", ".", "[SEP]"}));
  // Not a registered special token: lower-cased and split on punctuation.
  EXPECT_EQ(tok.basic_tokenize("[mask] [Mask]"),
            (std::vector<std::string>{"[", "mask", "]", "[", "mask", "]"}));
  EXPECT_EQ(tok.tokenize("x [MASK]"), (std::vector<std::string>{"[UNK]", "[MASK]"}));
}

TEST(Tokenizer, StripAccentsTriState) {
  TokenizerOptions o;
  o.do_lower_case = false;
  o.strip_accents = true;
  EXPECT_EQ(Tokenizer(Vocab(kSpecials), o).basic_tokenize("Café"),
            std::vector<std::string>{"Cafe"});
  o.do_lower_case = true;
  o.strip_accents = false;
  EXPECT_EQ(Tokenizer(Vocab(kSpecials), o).basic_tokenize("Café"),
            std::vector<std::string>{"café"});
}

TEST(Tokenizer, MalformedUtf8IsDropped) {
  const Tokenizer tok(Vocab(kSpecials), TokenizerOptions{});
  // A lone continuation byte, a truncated 3-byte sequence and an overlong '/' (C0 AF) vanish, as
  // with bytes.decode("utf-8", "ignore").
  EXPECT_EQ(tok.basic_tokenize("a\x80"
                               "b \xE2\x82"
                               "c \xC0\xAF"
                               "d"),
            (std::vector<std::string>{"ab", "c", "d"}));
  // Decoding comes first, so a special token broken by a stray byte is still whole.
  EXPECT_EQ(tok.basic_tokenize("x[S\xE8"
                               "EP]"),
            (std::vector<std::string>{"x", "[SEP]"}));
}

// --- the real bert-base-uncased vocab ------------------------------------------------------------
// Ids are 0-based line numbers of vocab.txt, read off with `grep -nx TOKEN vocab.txt` (minus 1):
// [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103, hello 7592, world 2088, a 1037,
// un 4895, ##fl 10258, ##in 2378, ##ching 8450, ##ly 2135, bleak 21657, and 1998, desperate 7143,
// sometimes 2823, ted 6945, ##ious 6313, film 2143, "." 1012.

class UncasedVocab : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test::data_dir() + "/vocab/bert-base-uncased-vocab.txt";
    BERTRT_REQUIRE_PATH(path_);
    tok_.emplace(Vocab::load(path_), TokenizerOptions{});
  }
  std::string path_;
  std::optional<Tokenizer> tok_;
};

TEST_F(UncasedVocab, SpecialIds) {
  EXPECT_EQ(tok_->vocab().size(), 30522);
  EXPECT_EQ(tok_->pad_id(), 0);
  EXPECT_EQ(tok_->unk_id(), 100);
  EXPECT_EQ(tok_->cls_id(), 101);
  EXPECT_EQ(tok_->sep_id(), 102);
  EXPECT_EQ(tok_->mask_id(), 103);
}

TEST_F(UncasedVocab, HelloWorld) {
  const Encoding e = tok_->encode("Hello World", std::nullopt);
  EXPECT_EQ(e.tokens, (std::vector<std::string>{"[CLS]", "hello", "world", "[SEP]"}));
  EXPECT_EQ(e.input_ids, (std::vector<int32_t>{101, 7592, 2088, 102}));
  EXPECT_EQ(e.token_type_ids, (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(e.attention_mask, (std::vector<int32_t>{1, 1, 1, 1}));
}

TEST_F(UncasedVocab, Sst2SentencesWithWordpieces) {
  // SST-2 dev.tsv lines 3 and 8.
  const auto a = tok_->tokenize("unflinchingly bleak and desperate ");
  EXPECT_EQ(a, (std::vector<std::string>{"un", "##fl", "##in", "##ching", "##ly", "bleak", "and",
                                         "desperate"}));
  EXPECT_EQ(tok_->convert_tokens_to_ids(a),
            (std::vector<int32_t>{4895, 10258, 2378, 8450, 2135, 21657, 1998, 7143}));
  const auto b = tok_->tokenize("a sometimes tedious film . ");
  EXPECT_EQ(tok_->convert_tokens_to_ids(b),
            (std::vector<int32_t>{1037, 2823, 6945, 6313, 2143, 1012}));
  EXPECT_EQ(tok_->convert_tokens_to_ids({"no-such-token"}), std::vector<int32_t>{100});
}

TEST_F(UncasedVocab, PairEncodingPaddedAndMasked) {
  const Encoding e =
      tok_->encode("a sometimes tedious film .", std::string("hello world"), 16, true);
  const std::vector<int32_t> ids = {101,  1037, 2823, 6945, 6313, 2143, 1012, 102,
                                    7592, 2088, 102,  0,    0,    0,    0,    0};
  EXPECT_EQ(e.input_ids, ids);
  EXPECT_EQ(e.token_type_ids,
            (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(e.attention_mask,
            (std::vector<int32_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0}));
  ASSERT_EQ(e.tokens.size(), 16u);
  EXPECT_EQ(e.tokens[10], "[SEP]");
  EXPECT_EQ(e.tokens[15], "[PAD]");
}

TEST_F(UncasedVocab, LongestFirstTruncation) {
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6}, b = {11, 12, 13};
  // Budget 10 - 3 = 7 of 9: A (6 > 3) loses two -> A 4, B 3.
  Encoding e = tok_->encode_ids(a, b, 10);
  EXPECT_EQ(e.input_ids, (std::vector<int32_t>{101, 1, 2, 3, 4, 102, 11, 12, 13, 102}));
  // Budget 8 - 3 = 5 of 9 removes 4: A 6->5->4->3, then the 3/3 tie goes to B: 3->2.
  e = tok_->encode_ids(a, b, 8);
  EXPECT_EQ(e.input_ids, (std::vector<int32_t>{101, 1, 2, 3, 102, 11, 12, 102}));
  EXPECT_EQ(e.token_type_ids, (std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 1}));
  // Ties go to B first: 3/3 with budget 4 -> B 2, then A 3 > 2 -> A 2.
  e = tok_->encode_ids({1, 2, 3}, std::vector<int32_t>{11, 12, 13}, 7);
  EXPECT_EQ(e.input_ids, (std::vector<int32_t>{101, 1, 2, 102, 11, 12, 102}));
  e = tok_->encode_ids({1, 2, 3}, std::vector<int32_t>{11, 12, 13}, 8);
  EXPECT_EQ(e.input_ids, (std::vector<int32_t>{101, 1, 2, 3, 102, 11, 12, 102}));
  // Single sequence: cut to max_seq_length - 2, no padding unless asked.
  e = tok_->encode_ids(a, std::nullopt, 4);
  EXPECT_EQ(e.input_ids, (std::vector<int32_t>{101, 1, 2, 102}));
  // The minimum lengths: everything but the special tokens goes.
  e = tok_->encode_ids(a, b, 3);
  EXPECT_EQ(e.input_ids, (std::vector<int32_t>{101, 102, 102}));
}

TEST_F(UncasedVocab, TooSmallMaxSeqLengthAndBadIdsThrow) {
  EXPECT_THROW(tok_->encode("a", std::string("b"), 2), Error);
  EXPECT_THROW(tok_->encode("a", std::nullopt, 1), Error);
  EXPECT_THROW(tok_->encode("a", std::nullopt, -1), Error);
  EXPECT_NO_THROW(tok_->encode("a", std::nullopt, 2));
  EXPECT_THROW(tok_->encode_ids({30522}, std::nullopt), Error);
  try {
    tok_->encode("a", std::string("b"), 2);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_seq_length 2"), std::string::npos) << e.what();
  }
}

// All of SST-2 dev against the Python reference (tests/reference/bert_tokenizer_ref.py).
TEST_F(UncasedVocab, Sst2DevMatchesPythonReference) {
  const std::string dev = test::data_dir() + "/glue/SST-2/dev.tsv";
  BERTRT_REQUIRE_PATH(dev);
  std::vector<std::string> sentences;
  {
    std::ifstream in(dev);
    std::string line;
    std::getline(in, line);  // header: sentence \t label
    while (std::getline(in, line)) sentences.push_back(line.substr(0, line.find('\t')));
  }
  const std::string input = test::build_dir() + "/tokenizer_sst2_dev.txt";
  const std::string output = test::build_dir() + "/tokenizer_sst2_dev_ids.txt";
  {
    std::ofstream out(input);
    for (const auto& s : sentences) out << s << "\n";
  }
  const std::string cmd = "python3 " + test::source_dir() +
                          "/tests/reference/bert_tokenizer_ref.py " + path_ + " --lower < " +
                          input + " > " + output;
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "python3 reference unavailable: " << cmd;
  std::ifstream ref(output);
  std::string line;
  size_t i = 0, mismatches = 0;
  for (; std::getline(ref, line) && i < sentences.size(); ++i) {
    std::istringstream ls(line);
    std::vector<int32_t> want;
    for (int32_t id; ls >> id;) want.push_back(id);
    const auto got = tok_->convert_tokens_to_ids(tok_->tokenize(sentences[i]));
    if (got != want && ++mismatches <= 5) ADD_FAILURE() << "sentence " << i << ": " << sentences[i];
  }
  EXPECT_EQ(i, sentences.size());
  EXPECT_EQ(i, 872u);
  EXPECT_EQ(mismatches, 0u);
}

// --- vocab and construction errors ---------------------------------------------------------------

std::string load_error(const std::string& path) {
  try {
    Vocab::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Vocab, LoadStripsLineEndsAndNumbersLines) {
  const test::TempDir tmp;
  const auto path = tmp.write("crlf.txt", "[PAD]\r\n[UNK]\r\n[CLS]\n[SEP]\n[MASK]\nhello");
  const Vocab v = Vocab::load(path);
  EXPECT_EQ(v.size(), 6);
  EXPECT_EQ(v.find("[UNK]"), 1);
  EXPECT_EQ(v.find("hello"), 5);
  EXPECT_EQ(v.find("absent"), -1);
  EXPECT_EQ(v.token(4), "[MASK]");
}

TEST(Vocab, LoadErrorsNameTheFileAndTheProblem) {
  const std::string missing = "/nonexistent/dir/vocab.txt";
  EXPECT_NE(load_error(missing).find(missing), std::string::npos);

  const test::TempDir tmp;
  const auto empty = tmp.write("empty.txt", "");
  const std::string e1 = load_error(empty);
  EXPECT_NE(e1.find(empty), std::string::npos) << e1;
  EXPECT_NE(e1.find("empty"), std::string::npos) << e1;

  const auto no_mask = tmp.write("nomask.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");
  const std::string e2 = load_error(no_mask);
  EXPECT_NE(e2.find(no_mask), std::string::npos) << e2;
  EXPECT_NE(e2.find("[MASK]"), std::string::npos) << e2;
  EXPECT_EQ(e2.find("[PAD]"), e2.find("[PAD] [UNK] [CLS]"))
      << "only [MASK] should be named missing: " << e2;
}

TEST(Tokenizer, ConstructorRequiresSpecialTokens) {
  TokenizerOptions o;
  o.mask_token = "<mask>";
  try {
    Tokenizer(Vocab(kSpecials), o);
    FAIL() << "expected bertrt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("<mask>"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace bertrt
