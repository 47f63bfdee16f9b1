// CoNLL-2003: the reader on the shared files (counts from the data README and awk over the tag
// column), IOB1 → IOB2, errors naming file and line, token-classification features (first piece
// labelled, windows for long sentences) and the round trip gold tags → logits → word tags.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "metrics/seqeval.h"
#include "tasks/conll.h"
#include "tasks/ner_features.h"
#include "test_util.h"

namespace bertrt {
namespace {

std::string conll(const std::string& f) { return test::data_dir() + "/conll2003/" + f; }
std::string vocab_path() { return test::data_dir() + "/vocab/bert-base-cased-vocab.txt"; }

Tokenizer cased_tokenizer() {
  TokenizerOptions o;
  o.do_lower_case = false;
  return Tokenizer(Vocab::load(vocab_path()), o);
}

template <typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no bertrt::Error thrown; expected one mentioning '" << parts.at(0) << "'";
  } catch (const Error& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message '" << e.what() << "' lacks '" << p << "'";
  }
}

std::string write(const test::TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string p = dir.file(name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::vector<std::vector<std::string>> gold_tags(const std::vector<NerSentence>& s) {
  std::vector<std::vector<int>> ids;
  for (const auto& x : s) ids.push_back(x.tags);
  return tag_strings(ids, conll2003_labels());
}

TEST(Conll, SharedFilesAreIob2WithOfficialCounts) {
  BERTRT_REQUIRE_PATH(conll("eng.testa"));
  ConllStats st;
  const auto testa = read_conll(conll("eng.testa"), conll2003_labels(), &st);
  EXPECT_EQ(testa.size(), 3250u);  // README: testa 3,250 sentences
  EXPECT_EQ(st.words, 51362u);     // awk 'NF>0' eng.testa | wc -l
  EXPECT_EQ(st.docstarts, 0u);     // README: no -DOCSTART- lines
  EXPECT_EQ(st.iob1_fixes, 0u);    // IOB2 already: no entity starts with I-
  EXPECT_EQ(testa[0].words[2], "LEICESTERSHIRE");
  EXPECT_EQ(conll2003_labels()[size_t(testa[0].tags[2])], "B-ORG");
  const auto e = entity_scores(gold_tags(testa), gold_tags(testa));
  EXPECT_EQ(e.gold, 5942);  // = the B- tags of testa (IOB2): the CoNLL-2003 dev entity count

  BERTRT_REQUIRE_PATH(conll("eng.train"));
  const auto train = read_conll(conll("eng.train"), conll2003_labels(), &st);
  EXPECT_EQ(train.size(), 14041u);  // README
  EXPECT_EQ(st.iob1_fixes, 0u);
  EXPECT_EQ(entity_scores(gold_tags(train), gold_tags(train)).gold, 23499);  // B- count
}

TEST(Conll, DocstartAndIob1) {
  test::TempDir dir;
  // The original release: -DOCSTART- lines, IOB1 (I-PER starts an entity; B- only between two
  // adjacent entities of one type).
  const std::string p = write(dir, "iob1.txt",
                              "-DOCSTART- -X- -X- O\n\n"
                              "John NNP I-NP I-PER\nSmith NNP I-NP I-PER\nsaw VBD I-VP O\n"
                              "Mary NNP I-NP I-PER\nAnn NNP I-NP B-PER\n\n\n"
                              "-DOCSTART- -X- -X- O\n"
                              "Paris NNP I-NP I-LOC\n");
  ConllStats st;
  const auto s = read_conll(p, conll2003_labels(), &st);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(st.docstarts, 2u);
  EXPECT_EQ(st.iob1_fixes, 3u);  // John, Mary, Paris
  const auto tags = gold_tags(s);
  EXPECT_EQ(tags[0], (std::vector<std::string>{"B-PER", "I-PER", "O", "B-PER", "B-PER"}));
  EXPECT_EQ(tags[1], (std::vector<std::string>{"B-LOC"}));
  EXPECT_EQ(s[1].line, 11u);
}

TEST(Conll, BadInputNamesFileAndLine) {
  test::TempDir dir;
  const std::string three = write(dir, "three.txt", "EU NNP B-NP B-ORG\n\nrejects VBZ B-VP\n");
  expect_error([&] { read_conll(three); },
               {three, "line 3", "expected 4 space-separated columns", "got 3"});
  const std::string five = write(dir, "five.txt", "EU NNP B-NP B-ORG extra\n");
  expect_error([&] { read_conll(five); }, {five, "line 1", "got 5"});
  const std::string tag = write(dir, "tag.txt", "EU NNP B-NP B-ORG\nrejects VBZ B-VP B-ACT\n");
  expect_error([&] { read_conll(tag); }, {tag, "line 2", "tag 'B-ACT' is not one of {O, B-PER"});
  const std::string latin1 =
      write(dir, "latin1.txt", "EU NNP B-NP B-ORG\nM\xFCller NNP B-NP B-PER\n");
  expect_error([&] { read_conll(latin1); }, {latin1, "line 2", "byte 2 (0xFC) is not UTF-8"});
  const std::string empty = write(dir, "empty.txt", "\n\n");
  expect_error([&] { read_conll(empty); }, {empty, "no sentences"});
  expect_error([&] { read_conll(dir.file("missing.txt")); }, {"not found"});
}

TEST(NerFeatures, FirstPieceCarriesTheLabel) {
  BERTRT_REQUIRE_PATH(vocab_path());
  const Tokenizer tok = cased_tokenizer();
  NerSentence s;
  s.words = {"Mushtaq", "beat", "Tendulkar"};
  s.tags = {1, 0, 1};  // B-PER O B-PER
  const NerEncoding enc = encode_ner(tok, {s}, 128);
  ASSERT_EQ(enc.features.size(), 1u);
  const NerFeature& f = enc.features[0];
  // Expected layout from the tokenizer itself: [CLS] pieces(word 0) pieces(word 1) ... [SEP].
  std::vector<int32_t> ids = {tok.cls_id()}, labels = {kIgnoreLabel}, words = {-1};
  for (size_t w = 0; w < s.words.size(); ++w) {
    const auto p = tok.convert_tokens_to_ids(tok.tokenize(s.words[w]));
    for (size_t k = 0; k < p.size(); ++k) {
      ids.push_back(p[k]);
      labels.push_back(k == 0 ? s.tags[w] : kIgnoreLabel);
      words.push_back(k == 0 ? int32_t(w) : -1);
    }
  }
  ids.push_back(tok.sep_id()), labels.push_back(kIgnoreLabel), words.push_back(-1);
  EXPECT_GT(ids.size(), 5u) << "the case is meant to have a word of several pieces";
  EXPECT_EQ(f.input_ids, ids);
  EXPECT_EQ(f.labels, labels);
  EXPECT_EQ(f.word_index, words);
  EXPECT_EQ(f.token_type_ids, std::vector<int32_t>(ids.size(), 0));
  EXPECT_EQ(enc.split_sentences, 0u);
}

// Logits that put all the mass on each word's gold tag at its first piece (other positions get
// noise that must be ignored).
std::vector<std::vector<float>> perfect_logits(const NerEncoding& enc, int K) {
  std::vector<std::vector<float>> logits;
  for (const NerFeature& f : enc.features) {
    std::vector<float> l(f.input_ids.size() * size_t(K));
    for (size_t t = 0; t < f.input_ids.size(); ++t)
      for (int k = 0; k < K; ++k)
        l[t * K + k] = f.labels[t] == kIgnoreLabel ? float((t * 7 + k * 3) % 5) : (k == f.labels[t] ? 9.f : -1.f);
    logits.push_back(std::move(l));
  }
  return logits;
}

TEST(NerFeatures, LongSentencesSplitIntoWindowsAndRoundTrip) {
  BERTRT_REQUIRE_PATH(conll("eng.testa"));
  BERTRT_REQUIRE_PATH(vocab_path());
  const Tokenizer tok = cased_tokenizer();
  const auto testa = read_conll(conll("eng.testa"));
  std::vector<size_t> num_words;
  for (const auto& s : testa) num_words.push_back(s.words.size());
  const int K = int(conll2003_labels().size());
  for (int max_len : {128, 16}) {
    SCOPED_TRACE(max_len);
    const NerEncoding enc = encode_ner(tok, testa, max_len);
    std::vector<size_t> covered(testa.size(), 0);
    for (const NerFeature& f : enc.features) {
      ASSERT_LE(f.input_ids.size(), size_t(max_len));
      ASSERT_EQ(f.first_word, covered[f.sentence]) << "windows are consecutive";
      covered[f.sentence] += f.num_words;
    }
    EXPECT_EQ(covered, num_words) << "every word in exactly one window";
    EXPECT_EQ(enc.empty_words, 0u);
    if (max_len == 16) {
      EXPECT_GT(enc.split_sentences, 100u);
    }
    std::printf("[ figures  ] eng.testa max_seq_length %d: %zu features, %zu sentences split, %zu words truncated\n",
                max_len, enc.features.size(), enc.split_sentences, enc.truncated_words);
    const auto pred = ner_word_predictions(enc.features, perfect_logits(enc, K), K, num_words);
    const auto p = tag_strings(pred, conll2003_labels());
    EXPECT_EQ(p, gold_tags(testa));
    EXPECT_DOUBLE_EQ(entity_scores(gold_tags(testa), p).f1, 1.0);
  }
  EXPECT_THROW(encode_ner(tok, testa, 2), Error);
}

}  // namespace
}  // namespace bertrt
