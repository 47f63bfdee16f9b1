// Training data: the pre-training corpus reader, MLM+NSP example creation (the
// create_pretraining_data.py recipe), batching, and the GLUE TSV reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "core/error.h"
#include "core/utf8.h"
#include "tasks/tsv_task.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "train/corpus.h"
#include "train/pretraining_data.h"

namespace bertrt {
namespace {

namespace fs = std::filesystem;

std::string enwiki_valid() { return test::data_dir() + "/corpus/enwiki/enwiki_valid_1000docs.txt"; }
std::string uncased_vocab() { return test::data_dir() + "/vocab/bert-base-uncased-vocab.txt"; }
std::string sst2_dev() { return test::data_dir() + "/glue/SST-2/dev.tsv"; }

using test::TempDir;

// Expects `f` to throw bertrt::Error whose message contains every string of `parts`.
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

// Corpus-logic tests do not depend on WordPiece: words are ids of first appearance, and words
// starting with "~" vanish (a tokenizer that drops a whole line, e.g. only control characters).
struct WordIds {
  std::map<std::string, int32_t> ids;
  std::vector<std::string> seen_lines;
  std::vector<int32_t> operator()(const std::string& line) {
    seen_lines.push_back(line);
    std::istringstream in(line);
    std::vector<int32_t> out;
    for (std::string w; in >> w;)
      if (w[0] != '~')
        out.push_back(ids.emplace(w, static_cast<int32_t>(ids.size())).first->second);
    return out;
  }
};

// ---------------------------------------------------------------------------------- corpus ------

TEST(Corpus, BlankLinesSeparateDocumentsAndEmptyOnesAreDropped) {
  TempDir dir;
  // Several blank lines in a row, a white-space-only line (spaces, tab, NBSP: Python's strip()
  // removes all three), a line the tokenizer empties, CRLF, no final newline.
  const std::string p =
      dir.write("c.txt", "\n\na b\nc\n\n\n \t\xC2\xA0\nd e\r\n~gone\n\n~gone\n\nf");
  WordIds words;
  const Documents docs = read_corpus(p, std::ref(words));
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0], (std::vector<std::vector<int32_t>>{{0, 1}, {2}}));
  EXPECT_EQ(docs[1], (std::vector<std::vector<int32_t>>{{3, 4}}));  // "~gone" line skipped
  EXPECT_EQ(docs[2], (std::vector<std::vector<int32_t>>{{5}}));     // "~gone"-only doc dropped
  EXPECT_EQ(words.seen_lines[2], "d e");                            // \r stripped before tokenizing
}

TEST(Corpus, DropsInvalidUtf8LikePythonDecodeIgnore) {
  // Expected strings: Python 3 bytes.decode("utf-8", "ignore") on the same bytes.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\xE2\x82"
       "A",
       "A"},                       // truncated 3-byte sequence
      {"\xED\xA0\x80x", "x"},      // UTF-16 surrogate
      {"\xC0\xAFy", "y"},          // overlong '/'
      {"\xE0\x80\x80q", "q"},      // overlong NUL
      {"\xF4\x90\x80\x80z", "z"},  // above U+10FFFF
      {"a\xFF"
       "b",
       "ab"},
      {"\xF0\x9F\x98", ""},                                      // truncated at the end
      {"\xF0\x9F\x98\x80\xC3\xA9", "\xF0\x9F\x98\x80\xC3\xA9"},  // valid: 😀é
  };
  for (auto [in, want] : cases) {
    // core/utf8.h, which the task readers use, finds the first byte that drop_invalid_utf8 drops.
    EXPECT_EQ(first_invalid_utf8(in) == std::string::npos, in == want) << in;
    const size_t before = in.size();
    const size_t dropped = drop_invalid_utf8(in);
    EXPECT_EQ(in, want);
    EXPECT_EQ(dropped, before - want.size());
  }

  TempDir dir;
  const std::string p = dir.write("u.txt",
                                  "ok line\nbad\xFF word\n\nfine\n\xC0\xAF"
                                  "x\n");
  WordIds words;
  CorpusStats st;
  const Documents docs = read_corpus(p, std::ref(words), {}, &st);
  EXPECT_EQ(words.seen_lines[1], "bad word");
  EXPECT_EQ(st.invalid_utf8_lines, 2u);
  EXPECT_EQ(st.first_invalid_utf8_line, 2u);
  EXPECT_EQ(st.documents, 2u);
  EXPECT_EQ(st.lines, 5u);
}

TEST(Corpus, ErrorsNameTheFile) {
  TempDir dir;
  WordIds words;
  const std::string missing = dir.path() + "/nope.txt";
  expect_error([&] { read_corpus(missing, std::ref(words)); }, {missing, "not found"});
  expect_error([&] { read_corpus(dir.path(), std::ref(words)); }, {dir.path(), "directory"});
  const std::string empty = dir.write("empty.txt", "");
  expect_error([&] { read_corpus(empty, std::ref(words)); }, {empty, "empty"});
  const std::string blank = dir.write("blank.txt", "\n  \n\t\n");
  expect_error([&] { read_corpus(blank, std::ref(words)); }, {blank, "empty"});
  const std::string notok = dir.write("notok.txt", "~a ~b\n\n~c\n");
  expect_error([&] { read_corpus(notok, std::ref(words)); }, {notok, "no tokens"});
  const std::string one = dir.write("one.txt", "a b\nc d\n\n\n");
  CorpusOptions nsp;
  nsp.min_documents = 2;
  expect_error([&] { read_corpus(one, std::ref(words), nsp); },
               {one, "1 document", "next-sentence"});
}

TEST(Corpus, ReadsRealCorpusWithProgress) {
  BERTRT_REQUIRE_PATH(enwiki_valid());
  BERTRT_REQUIRE_PATH(uncased_vocab());
  const Tokenizer tok(Vocab::load(uncased_vocab()), TokenizerOptions{});
  std::vector<std::pair<size_t, size_t>> calls;
  CorpusOptions opts;
  opts.min_documents = 2;
  opts.progress = [&](size_t done, size_t total) { calls.emplace_back(done, total); };
  CorpusStats st;
  const Documents docs = read_corpus(enwiki_valid(), tok, opts, &st);
  const size_t file_size = fs::file_size(enwiki_valid());
  EXPECT_EQ(docs.size(), 1000u);  // data README: 1,000 documents
  EXPECT_EQ(st.documents, 1000u);
  EXPECT_EQ(st.bytes, file_size);
  EXPECT_EQ(st.invalid_utf8_lines, 0u);
  ASSERT_GE(calls.size(), 2u);  // 1.86 MB: one call per 256 KiB and a final one
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].second, file_size);
    if (i > 0) {
      EXPECT_GE(calls[i].first, calls[i - 1].first);
    }
  }
  EXPECT_EQ(calls.back().first, file_size);
  // The first line of the file, tokenized by the uncased vocab.
  const std::vector<int32_t> first =
      tok.convert_tokens_to_ids(tok.tokenize("Mitromorpha cubana is a species of sea snail, a "
                                             "marine gastropod mollusk in the family "
                                             "Mitromorphidae."));
  size_t n = 0;
  for (const auto& d : docs)
    for (const auto& l : d) n += l.size();
  EXPECT_EQ(n, st.tokens);
  EXPECT_TRUE(std::any_of(docs.begin(), docs.end(), [&](const auto& d) { return d[0] == first; }));
}

// -------------------------------------------------------------------- pre-training examples -----

// Original ids at every position: masked positions restored from masked_lm_ids.
std::vector<int32_t> restored(const PretrainingExample& ex) {
  std::vector<int32_t> ids = ex.input_ids;
  for (size_t k = 0; k < ex.masked_lm_positions.size(); ++k)
    ids[ex.masked_lm_positions[k]] = ex.masked_lm_ids[k];
  return ids;
}

// Python 3 values: [min(20, max(1, round(n * 0.15))) for n in ns] (round half to even:
// 1.5 → 2, 4.5 → 4, 7.5 → 8, 10.5 → 10, 16.5 → 16).
TEST(PretrainingData, MaskCountRoundsHalfToEvenLikePython) {
  const std::vector<int> ns = {5, 6, 9, 10, 11, 30, 50, 70, 90, 110, 128, 130, 200};
  const std::vector<int> want = {1, 1, 1, 2, 2, 4, 8, 10, 14, 16, 19, 20, 20};
  for (size_t i = 0; i < ns.size(); ++i)
    EXPECT_EQ(num_masked_predictions(ns[i], 0.15f, 20), want[i]) << "n = " << ns[i];
}

// Synthetic documents whose ids say where they come from: document d, token k has id
// kBase + 1000·d + k, so each segment's provenance and contiguity can be checked.
constexpr int32_t kCls = 1, kSep = 2, kMask = 3, kBase = 100;
Documents provenance_documents(int n_docs, std::mt19937_64& rng) {
  Documents docs(n_docs);
  for (int d = 0; d < n_docs; ++d) {
    int32_t next = kBase + 1000 * d;
    const int lines = 1 + static_cast<int>(rng() % 8);
    for (int l = 0; l < lines; ++l) {
      std::vector<int32_t> line(1 + rng() % 30);
      for (auto& id : line) id = next++;
      docs[d].push_back(line);
    }
  }
  return docs;
}

int doc_of(int32_t id) { return (id - kBase) / 1000; }

bool contiguous(const std::vector<int32_t>& s) {
  for (size_t i = 1; i < s.size(); ++i)
    if (s[i] != s[i - 1] + 1) return false;
  return !s.empty();
}

TEST(PretrainingData, SegmentsComeFromTheRightDocuments) {
  std::mt19937_64 gen(7);
  const Documents docs = provenance_documents(40, gen);
  PretrainingOptions opts;
  opts.max_seq_length = 64;
  std::mt19937_64 rng(opts.seed);
  PretrainingStats st;
  const auto examples =
      create_pretraining_examples(docs, opts, kCls, kSep, kMask, kBase + 1000 * 40, rng, &st);
  ASSERT_EQ(examples.size(), st.examples);
  size_t label0 = 0, label1 = 0;
  for (const auto& ex : examples) {
    const std::vector<int32_t> ids = restored(ex);
    ASSERT_LE(ids.size(), 64u);
    const size_t sep = std::find(ids.begin(), ids.end(), kSep) - ids.begin();
    ASSERT_LT(sep + 1, ids.size() - 1);  // A and B each hold ≥ 1 token
    const std::vector<int32_t> a(ids.begin() + 1, ids.begin() + sep),
        b(ids.begin() + sep + 1, ids.end() - 1);
    // Truncation removes tokens from either end only, so each segment stays contiguous.
    EXPECT_TRUE(contiguous(a));
    EXPECT_TRUE(contiguous(b));
    if (ex.next_sentence_label == 0) {
      ++label0;
      EXPECT_EQ(doc_of(a[0]), doc_of(b[0]));  // the real continuation
      EXPECT_GT(b[0], a.back());
    } else {
      ASSERT_EQ(ex.next_sentence_label, 1);
      ++label1;
      EXPECT_NE(doc_of(a[0]), doc_of(b[0]));  // always ANOTHER document
    }
  }
  EXPECT_GT(label0, 0u);
  EXPECT_GT(label1, 0u);
}

TEST(PretrainingData, WithoutNspSegmentsAreSingle) {
  std::mt19937_64 gen(8);
  const Documents docs = provenance_documents(1, gen);  // one document is enough without NSP
  PretrainingOptions opts;
  opts.nsp = false;
  opts.max_seq_length = 32;
  std::mt19937_64 rng(1);
  const auto examples = create_pretraining_examples(docs, opts, kCls, kSep, kMask, 5000, rng);
  ASSERT_FALSE(examples.empty());
  for (const auto& ex : examples) {
    const std::vector<int32_t> ids = restored(ex);
    ASSERT_LE(ids.size(), 32u);
    EXPECT_EQ(ids.front(), kCls);
    EXPECT_EQ(ids.back(), kSep);
    EXPECT_TRUE(contiguous({ids.begin() + 1, ids.end() - 1}));
    EXPECT_EQ(ex.token_type_ids, std::vector<int32_t>(ids.size(), 0));
    EXPECT_EQ(ex.next_sentence_label, -1);
  }
}

TEST(PretrainingData, RejectsBadInputs) {
  std::mt19937_64 rng(1);
  const Documents one = {{{5, 6, 7}}};
  PretrainingOptions opts;
  expect_error([&] { create_pretraining_examples(one, opts, kCls, kSep, kMask, 100, rng); },
               {"need at least 2", "next-sentence"});
  opts.max_seq_length = 4;
  expect_error([&] { create_pretraining_examples(one, opts, kCls, kSep, kMask, 100, rng); },
               {"max_seq_length 4"});
  opts = {};
  opts.masked_lm_prob = 1.5f;
  expect_error([&] { create_pretraining_examples(one, opts, kCls, kSep, kMask, 100, rng); },
               {"masked_lm_prob"});
}

class RealPretrainingData : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::have_data(enwiki_valid()) || !test::have_data(uncased_vocab())) return;
    tok_ = new Tokenizer(Vocab::load(uncased_vocab()), TokenizerOptions{});
    docs_ = new Documents(read_corpus(enwiki_valid(), *tok_));
  }
  static void TearDownTestSuite() {
    delete docs_;
    delete tok_;
    docs_ = nullptr;
    tok_ = nullptr;
  }
  void SetUp() override {
    BERTRT_REQUIRE_PATH(enwiki_valid());
    BERTRT_REQUIRE_PATH(uncased_vocab());
  }
  static std::vector<PretrainingExample> make(uint64_t seed, PretrainingStats* st = nullptr) {
    PretrainingOptions opts;
    opts.seed = seed;
    std::mt19937_64 rng(opts.seed);
    return create_pretraining_examples(*docs_, opts, tok_->cls_id(), tok_->sep_id(),
                                       tok_->mask_id(), tok_->vocab().size(), rng, st);
  }
  static Tokenizer* tok_;
  static Documents* docs_;
};
Tokenizer* RealPretrainingData::tok_ = nullptr;
Documents* RealPretrainingData::docs_ = nullptr;

bool same(const PretrainingExample& x, const PretrainingExample& y) {
  return x.input_ids == y.input_ids && x.token_type_ids == y.token_type_ids &&
         x.masked_lm_positions == y.masked_lm_positions && x.masked_lm_ids == y.masked_lm_ids &&
         x.next_sentence_label == y.next_sentence_label;
}

TEST_F(RealPretrainingData, DeterministicForASeed) {
  const auto a = make(12345), b = make(12345), c = make(54321);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(same(a[i], b[i])) << "example " << i;
  size_t equal = 0;
  for (size_t i = 0; i < std::min(a.size(), c.size()); ++i) equal += same(a[i], c[i]);
  EXPECT_LT(equal, a.size() / 100) << "another seed should give other examples";
}

TEST_F(RealPretrainingData, LayoutAndMaskCounts) {
  const auto examples = make(12345);
  ASSERT_GT(examples.size(), 1000u);
  const int32_t cls = tok_->cls_id(), sep = tok_->sep_id();
  size_t short_ones = 0;
  for (size_t e = 0; e < examples.size(); ++e) {
    const PretrainingExample& ex = examples[e];
    SCOPED_TRACE("example " + std::to_string(e));
    const std::vector<int32_t> ids = restored(ex);
    const size_t n = ids.size();
    ASSERT_LE(n, 128u);
    ASSERT_EQ(ex.token_type_ids.size(), n);
    short_ones += n < 100;
    // [CLS] A [SEP] B [SEP] with types 0 for [CLS] A [SEP] and 1 for B [SEP].
    const size_t ones = std::count(ex.token_type_ids.begin(), ex.token_type_ids.end(), 1);
    const size_t sep1 = n - ones - 1;
    ASSERT_GE(sep1, 2u);  // A has ≥ 1 token
    ASSERT_GE(ones, 2u);  // B has ≥ 1 token
    EXPECT_TRUE(std::is_sorted(ex.token_type_ids.begin(), ex.token_type_ids.end()));
    EXPECT_EQ(ids[0], cls);
    EXPECT_EQ(ids[sep1], sep);
    EXPECT_EQ(ids[n - 1], sep);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), cls), 1);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), sep), 2);
    // Exactly min(max_pred, max(1, round_half_even(0.15·n))) masked positions, strictly
    // ascending, never on [CLS]/[SEP].
    const double r = std::nearbyint(0.15 * static_cast<double>(n));
    const size_t want = static_cast<size_t>(std::min(20.0, std::max(1.0, r)));
    ASSERT_EQ(ex.masked_lm_positions.size(), want);
    ASSERT_EQ(ex.masked_lm_ids.size(), want);
    for (size_t k = 0; k < want; ++k) {
      const int32_t pos = ex.masked_lm_positions[k];
      ASSERT_GE(pos, 1);
      ASSERT_LT(static_cast<size_t>(pos), n - 1);
      EXPECT_NE(static_cast<size_t>(pos), sep1);
      if (k > 0) {
        EXPECT_GT(pos, ex.masked_lm_positions[k - 1]);
      }
      EXPECT_NE(ex.masked_lm_ids[k], cls);
      EXPECT_NE(ex.masked_lm_ids[k], sep);
    }
  }
  // short_seq_prob 0.1 gives some short targets (and documents end early), but most are long.
  EXPECT_GT(short_ones, examples.size() / 20);
  EXPECT_LT(short_ones, examples.size() / 2);
}

// |count − n·p| ≤ 4.5·sqrt(n·p·(1−p)): a binomial count outside this bound happens with
// probability below 1e-5 under the recipe's p, so a failure means the recipe is wrong.
void expect_binomial(size_t count, size_t n, double p, const char* what) {
  const double mean = n * p, sigma = std::sqrt(n * p * (1 - p));
  EXPECT_LE(std::abs(static_cast<double>(count) - mean), 4.5 * sigma)
      << what << ": " << count << " of " << n << ", expected " << mean << " ± 4.5·" << sigma;
}

TEST_F(RealPretrainingData, MaskingAndNspFractions) {
  PretrainingStats st;
  const auto examples = make(12345, &st);
  const int32_t mask = tok_->mask_id();
  const double V = tok_->vocab().size();
  size_t total = 0, masked = 0, kept = 0, random = 0, label1 = 0;
  for (const auto& ex : examples) {
    for (size_t k = 0; k < ex.masked_lm_positions.size(); ++k) {
      const int32_t now = ex.input_ids[ex.masked_lm_positions[k]];
      ++total;
      if (now == mask)
        ++masked;
      else if (now == ex.masked_lm_ids[k])
        ++kept;
      else
        ++random;
    }
    label1 += ex.next_sentence_label == 1;
  }
  EXPECT_EQ(total, st.masked_tokens);
  // A random replacement is uniform over the V ids, so it lands on [MASK] or on the original
  // with probability 1/V each: the observable shares are 0.8 + 0.1/V, 0.1 + 0.1/V, 0.1·(V−2)/V.
  expect_binomial(masked, total, 0.8 + 0.1 / V, "[MASK]");
  expect_binomial(kept, total, 0.1 + 0.1 / V, "kept");
  expect_binomial(random, total, 0.1 * (V - 2) / V, "random");
  // NSP: a chunk of one line always gets a random B (create_instances_from_document); the others
  // get one with probability 1/2.
  ASSERT_LT(st.forced_random_next, examples.size());
  expect_binomial(label1 - st.forced_random_next, examples.size() - st.forced_random_next, 0.5,
                  "NSP label 1 among coin-flip examples");
  std::printf(
      "enwiki valid: %zu examples, %zu masked tokens, NSP label 1: %.3f overall "
      "(%zu forced by single-line chunks)\n",
      examples.size(), total, double(label1) / examples.size(), st.forced_random_next);
}

// ------------------------------------------------------------------------------ batching -------

TEST(PretrainingBatch, PadsAndFlattensPositions) {
  std::vector<PretrainingExample> ex(3);
  ex[0] = {{1, 10, 3, 2, 11, 2}, {0, 0, 0, 0, 1, 1}, {2}, {12}, 0};
  ex[1] = {{1, 3, 21, 2, 22, 23, 2}, {0, 0, 0, 0, 1, 1, 1}, {1, 5}, {20, 24}, 1};
  ex[2] = {{1, 30, 2, 3, 2}, {0, 0, 0, 1, 1}, {3}, {31}, 1};
  const int T = 8, pad = 0;
  const Batch b = make_pretraining_batch(ex, 0, 2, T, pad);
  EXPECT_EQ(b.batch_size, 2);
  EXPECT_EQ(b.seq_len, T);
  EXPECT_EQ(b.input_ids, (std::vector<int32_t>{1, 10, 3, 2, 11, 2, 0, 0,  //
                                               1, 3, 21, 2, 22, 23, 2, 0}));
  EXPECT_EQ(b.token_type_ids, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 0, 0,  //
                                                    0, 0, 0, 0, 1, 1, 1, 0}));
  EXPECT_EQ(b.attention_mask, (std::vector<int32_t>{1, 1, 1, 1, 1, 1, 0, 0,  //
                                                    1, 1, 1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(b.masked_lm_positions, (std::vector<int32_t>{2, 8 + 1, 8 + 5}));
  EXPECT_EQ(b.masked_lm_ids, (std::vector<int32_t>{12, 20, 24}));
  EXPECT_EQ(b.next_sentence_labels, (std::vector<int32_t>{0, 1}));

  const Batch last = make_pretraining_batch(ex, 2, 2, T, pad);  // the tail is shorter
  EXPECT_EQ(last.batch_size, 1);
  EXPECT_EQ(last.input_ids.size(), size_t(T));
  EXPECT_EQ(last.masked_lm_positions, (std::vector<int32_t>{3}));

  expect_error([&] { make_pretraining_batch(ex, 3, 2, T, pad); }, {"start 3"});
  expect_error([&] { make_pretraining_batch(ex, 0, 2, 6, pad); }, {"example 1", "7 tokens"});
}

// ---------------------------------------------------------------------------- GLUE TSV --------

TEST(GlueTsv, ReadsSst2Dev) {
  BERTRT_REQUIRE_PATH(sst2_dev());
  const auto ex = read_glue_tsv(sst2_dev(), glue_task("sst2"));
  ASSERT_EQ(ex.size(), 872u);  // data README: dev 872 (444 positive)
  EXPECT_EQ(std::count_if(ex.begin(), ex.end(), [](const auto& e) { return e.label == 1; }), 444);
  EXPECT_EQ(ex[0].text_a, "it 's a charming and often affecting journey . ");
  EXPECT_EQ(ex[0].label, 1);
  EXPECT_EQ(ex[1].text_a, "unflinchingly bleak and desperate ");
  EXPECT_EQ(ex[1].label, 0);
  EXPECT_FALSE(ex[0].text_b.has_value());
}

TEST(GlueTsv, UnknownTaskListsKnownOnes) {
  expect_error([] { glue_task("mnli-x"); }, {"mnli-x", "sst2"});
}

TEST(GlueTsv, BomAndCrlfAreTolerated) {
  TempDir dir;
  const auto ex = read_glue_tsv(dir.write("ok.tsv", "\xEF\xBB\xBFsentence\tlabel\r\ngood\t1\r\n"),
                                glue_task("sst2"));
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].text_a, "good");
  EXPECT_EQ(ex[0].label, 1);
}

TEST(GlueTsv, ErrorsNameFileAndLine) {
  TempDir dir;
  const TaskSpec& sst2 = glue_task("sst2");
  auto fails = [&](const std::string& name, const std::string& bytes,
                   std::vector<std::string> parts) {
    SCOPED_TRACE(name);
    const std::string p =
        name == "missing.tsv" ? dir.path() + "/missing.tsv" : dir.write(name, bytes);
    parts.insert(parts.begin(), p);
    expect_error([&] { read_glue_tsv(p, sst2); }, parts);
  };
  const std::string h = "sentence\tlabel\n";
  fails("missing.tsv", "", {"not found"});
  fails("empty.tsv", "", {"empty file"});
  fails("header_only.tsv", h, {"no examples"});
  fails("bad_header.tsv", "text\tlabel\ngood\t1\n", {"line 1", "header"});
  fails("no_label.tsv", h + "good\t1\nbad movie\n", {"line 3", "missing column 'label'"});
  fails("extra_tab.tsv", h + "good\tfun\t1\n", {"line 2", "expected 2", "got 3"});
  fails("word_label.tsv", h + "good\tpositive\n", {"line 2", "integer label", "'positive'"});
  fails("empty_label.tsv", h + "good\t\n", {"line 2", "integer label"});
  fails("label_2.tsv", h + "good\t1\nmeh\t2\n", {"line 3", "'2'", "{0, 1}"});
  fails("label_neg.tsv", h + "bad\t-1\n", {"line 2", "'-1'", "{0, 1}"});
}

}  // namespace
}  // namespace bertrt
