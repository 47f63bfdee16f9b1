// SQuAD v1.1: reader and article split on the shared file (counts from Python's json), offset
// errors, the offset-tracking tokenizer against Tokenizer::tokenize, window features, and the
// round trip gold span → features → perfect logits → post-processing → EM/F1.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "core/error.h"
#include "metrics/squad_eval.h"
#include "tasks/squad.h"
#include "tasks/squad_features.h"
#include "test_util.h"
#include "tokenizer/offsets.h"

namespace bertrt {
namespace {

std::string squad_path() { return test::data_dir() + "/squad_v1.1/dev-v1.1-articles-00-39.json"; }
std::string vocab_path(const char* which) {
  return test::data_dir() + "/vocab/bert-base-" + which + "-vocab.txt";
}

Tokenizer make_tokenizer(bool lower) {
  TokenizerOptions o;
  o.do_lower_case = lower;
  return Tokenizer(Vocab::load(vocab_path(lower ? "uncased" : "cased")), o);
}

const SquadDataset& dataset() {
  static const SquadDataset d = read_squad(squad_path());
  return d;
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

TEST(Squad, ReadsAndSplitsByArticle) {
  BERTRT_REQUIRE_PATH(squad_path());
  const SquadDataset& d = dataset();
  EXPECT_EQ(d.titles.size(), 40u);
  EXPECT_EQ(d.examples.size(), 8981u);  // README: 8,981 questions
  EXPECT_EQ(select_articles(d, 0, 30).size(), 7010u);  // Python: sum of len(qas) of articles 0-29
  EXPECT_EQ(select_articles(d, 30, 40).size(), 1971u);
  const SquadExample& e = d.examples[0];
  EXPECT_EQ(e.id, "56be4db0acb8001400a502ec");
  EXPECT_EQ(e.answers.size(), 3u);
  EXPECT_EQ(e.answers[0].text, "Denver Broncos");
  EXPECT_EQ(e.answers[0].char_start, 177u);
  EXPECT_EQ(e.context.substr(e.answers[0].byte_start, 14), "Denver Broncos");
  // Non-ASCII contexts: byte and code-point offsets differ and both are kept.
  size_t differ = 0;
  for (const auto& x : d.examples)
    for (const auto& a : x.answers) differ += a.byte_start != a.char_start;
  EXPECT_GT(differ, 0u);
  EXPECT_THROW(select_articles(d, 30, 41), Error);
  EXPECT_THROW(select_articles(d, 5, 5), Error);
}

TEST(Squad, AnswerOffsetMismatchNamesFileQuestionAndOffset) {
  test::TempDir dir;
  const std::string p = dir.file("bad.json");
  std::ofstream(p) << R"({"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context":
      "The cat sat on the mat.", "qas": [{"id": "q1", "question": "Who sat?", "answers":
      [{"answer_start": 4, "text": "cat"}]}, {"id": "q2", "question": "Where?", "answers":
      [{"answer_start": 14, "text": "the mat"}]}]}]}]})";
  expect_error([&] { read_squad(p); },
               {p, "question q2", "answer 'the mat' at offset 14", "(' the ma')"});
  const std::string q = dir.file("missing.json");
  std::ofstream(q) << R"({"data": [{"title": "T", "paragraphs": [{"qas": []}]}]})";
  expect_error([&] { read_squad(q); }, {q, "article 0 paragraph 0", "missing field 'context'"});
}

// A question without answers (SQuAD 2.0's kind) failed the metric only at the first evaluation,
// after an epoch of training, without naming file or question; a negative offset was "the wrong
// type (number)".
TEST(Squad, UnansweredQuestionAndNegativeOffsetFailAtLoad) {
  test::TempDir dir;
  const std::string p = dir.file("noans.json");
  std::ofstream(p) << R"({"data": [{"title": "T", "paragraphs": [{"context": "The cat sat.",
      "qas": [{"id": "q1", "question": "Who sat?", "answers": [{"answer_start": 4,
      "text": "cat"}]}, {"id": "q-7", "question": "Which river?", "answers": []}]}]}]})";
  expect_error([&] { read_squad(p); }, {p, "question 'q-7': no answers"});
  const std::string n = dir.file("neg.json");
  std::ofstream(n) << R"({"data": [{"title": "T", "paragraphs": [{"context": "The cat sat.",
      "qas": [{"id": "q1", "question": "Who sat?", "answers": [{"answer_start": -1,
      "text": "cat"}]}]}]}]})";
  expect_error([&] { read_squad(n); },
               {n, "question q1 answer", "'answer_start' must be a non-negative integer, got -1"});
}

// An empty answer text and a repeated id loaded and trained; eval counted the repeated question
// twice (evaluate-v1.1.py keys predictions by id).
TEST(Squad, EmptyAnswerTextAndRepeatedIdFailAtLoad) {
  test::TempDir dir;
  const std::string e = dir.file("empty.json");
  std::ofstream(e) << R"({"data": [{"title": "T", "paragraphs": [{"context": "The cat sat.",
      "qas": [{"id": "q1", "question": "Who sat?", "answers": [{"answer_start": 0,
      "text": ""}]}]}]}]})";
  expect_error([&] { read_squad(e); }, {e, "question 'q1': an answer's text is empty"});
  const std::string d = dir.file("dup.json");
  std::ofstream(d) << R"({"data": [{"title": "T", "paragraphs": [{"context": "The cat sat.",
      "qas": [{"id": "1", "question": "Who sat?", "answers": [{"answer_start": 4,
      "text": "cat"}]}, {"id": "1", "question": "Who?", "answers": [{"answer_start": 4,
      "text": "cat"}]}]}]}]})";
  expect_error([&] { read_squad(d); },
               {d, "article 0 paragraph 0 question 1: id '1' is used by an earlier question"});
}

// Articles [30, kLastArticle) of the dev set for the window test: 10 natively, 2 under qemu or
// a sanitizer (test::sparse).
const int kLastArticle = test::sparse() ? 32 : 40;

TEST(TokenizeWithOffsets, SamePiecesAsTokenizeOnEverySquadText) {
  BERTRT_SKIP_UNDER_EMULATOR();
  BERTRT_REQUIRE_PATH(squad_path());
  for (bool lower : {true, false}) {
    SCOPED_TRACE(lower ? "uncased" : "cased");
    const Tokenizer tok = make_tokenizer(lower);
    const std::string* last = nullptr;
    size_t texts = 0;
    // Under qemu or a sanitizer every 8th example (the release suite runs on all of them).
    const size_t step = test::sparse() ? 8 : 1;
    const auto& all = dataset().examples;
    for (size_t i = 0; i < all.size(); i += step) {
      const SquadExample& e = all[i];
      for (const std::string* text : {&e.question, &e.context}) {
        if (text == &e.context && last && *last == e.context) continue;
        if (text == &e.context) last = &e.context;
        ++texts;
        const auto spans = tokenize_with_offsets(tok, *text);
        const auto pieces = tok.tokenize(*text);
        ASSERT_EQ(spans.size(), pieces.size()) << *text;
        size_t prev_end = 0;
        for (size_t k = 0; k < spans.size(); ++k) {
          ASSERT_EQ(spans[k].token, pieces[k]) << "piece " << k << " of: " << *text;
          ASSERT_LT(spans[k].begin, spans[k].end);
          ASSERT_LE(prev_end, spans[k].begin) << "ranges never overlap";
          ASSERT_LE(spans[k].end, text->size());
          prev_end = spans[k].end;
          // Cased, ASCII, known pieces: the range is the piece's own text.
          const std::string src = text->substr(spans[k].begin, spans[k].end - spans[k].begin);
          const std::string bare = pieces[k].rfind("##", 0) == 0 ? pieces[k].substr(2) : pieces[k];
          if (!lower && pieces[k] != "[UNK]" &&
              std::all_of(src.begin(), src.end(), [](char c) { return (unsigned char)c < 128; })) {
            ASSERT_EQ(src, bare);
          }
        }
      }
    }
    EXPECT_GT(texts, 9000u / step);
  }
}

TEST(TokenizeWithOffsets, TrickyCasesMatchTokenize) {
  const std::string cases = test::shared_dir() + "/tests/tokenizer_cases.json";
  BERTRT_REQUIRE_PATH(cases);
  BERTRT_REQUIRE_PATH(vocab_path("uncased"));
  const auto j = nlohmann::json::parse(std::ifstream(cases));
  const Tokenizer uncased = make_tokenizer(true), cased = make_tokenizer(false);
  size_t n = 0;
  for (const auto& c : j.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    const Tokenizer& tok = c.value("do_lower_case", true) ? uncased : cased;
    const auto spans = tokenize_with_offsets(tok, text);
    const auto pieces = tok.tokenize(text);
    ASSERT_EQ(spans.size(), pieces.size()) << c.at("id");
    for (size_t k = 0; k < spans.size(); ++k) {
      EXPECT_EQ(spans[k].token, pieces[k]) << c.at("id");
      EXPECT_LE(spans[k].end, text.size());
    }
    ++n;
  }
  EXPECT_GT(n, 10u);
  // Hand-checked ranges: "İstanbul's ﬁne" lower-cases İ to "i̇" (the dot is stripped), keeps ﬁ.
  const std::string t = "Na\xC3\xAFve  [SEP]x";  // "Naïve  [SEP]x"
  const auto s = tokenize_with_offsets(uncased, t);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].token, "naive");
  EXPECT_EQ(s[0].begin, 0u);
  EXPECT_EQ(s[0].end, 6u);  // ï is 2 bytes
  EXPECT_EQ(s[1].token, "[SEP]");
  EXPECT_EQ(t.substr(s[1].begin, s[1].end - s[1].begin), "[SEP]");
  EXPECT_EQ(s[2].token, "x");
  EXPECT_EQ(s[2].begin, 13u);
}

TEST(SquadFeatures, WindowsCoverTheContextWithTheStride) {
  BERTRT_REQUIRE_PATH(squad_path());
  const Tokenizer tok = make_tokenizer(true);
  const auto examples = select_articles(dataset(), 30, kLastArticle);
  SquadFeatureOptions o;
  o.max_seq_length = 128;
  o.doc_stride = 64;
  SquadFeatureStats st;
  const auto features = make_squad_features(tok, examples, o, &st);
  EXPECT_EQ(st.examples, examples.size());
  EXPECT_GT(st.features, examples.size());
  size_t i = 0;
  while (i < features.size()) {
    const SquadExample& ex = examples[features[i].example];
    const size_t n_ctx = tokenize_with_offsets(tok, ex.context).size();
    const auto q = tok.tokenize(ex.question);
    size_t covered_to = 0, first_piece = 0;
    int w = 0;
    for (; i < features.size() && &examples[features[i].example] == &ex; ++i, ++w) {
      const SquadFeature& f = features[i];
      ASSERT_EQ(f.window, w);
      ASSERT_LE(f.input_ids.size(), 128u);
      ASSERT_EQ(f.input_ids[0], tok.cls_id());
      ASSERT_EQ(f.context_begin, int(std::min<size_t>(q.size(), 64) + 2));
      ASSERT_EQ(f.input_ids[size_t(f.context_begin) - 1], tok.sep_id());
      ASSERT_EQ(f.input_ids.back(), tok.sep_id());
      ASSERT_EQ(f.token_type_ids[size_t(f.context_begin)], 1);
      ASSERT_EQ(f.token_type_ids[size_t(f.context_begin) - 1], 0);
      ASSERT_EQ(f.offset_begin[0], -1);
      if (w > 0) first_piece += 64;  // run_squad.py: each window starts doc_stride later
      const size_t len = size_t(f.context_end - f.context_begin);
      covered_to = first_piece + len;
      ASSERT_LE(covered_to, n_ctx);
      if (f.start_position > 0) {
        // The gold span's pieces overlap the first answer and lie in the context.
        const SquadAnswer& a = ex.answers[0];
        ASSERT_LE(f.start_position, f.end_position);
        ASSERT_GE(f.start_position, f.context_begin);
        ASSERT_LT(f.end_position, f.context_end);
        ASSERT_LE(f.offset_begin[size_t(f.start_position)], int64_t(a.byte_start));
        ASSERT_GE(f.offset_end[size_t(f.end_position)], int64_t(a.byte_start + a.text.size()));
      }
    }
    ASSERT_EQ(covered_to, n_ctx) << "the last window ends at the context's end";
  }
  std::printf("[ figures  ] articles 30-39, max_seq_length 128, doc_stride 64: %zu examples -> %zu features, "
              "%zu questions truncated, %zu features without the answer\n",
              st.examples, st.features, st.truncated_questions, st.answers_outside);
  o.max_seq_length = 10;
  EXPECT_THROW(make_squad_features(tok, examples, o), Error);
}

// Start/end logits 10 at the gold positions of the windows that hold the answer, small noise
// elsewhere (a [CLS]-target window gets its 10s on [CLS], which post-processing never picks).
void perfect_logits(const std::vector<SquadFeature>& features, std::vector<std::vector<float>>& s,
                    std::vector<std::vector<float>>& e) {
  for (const SquadFeature& f : features) {
    const size_t T = f.input_ids.size();
    std::vector<float> a(T), b(T);
    for (size_t t = 0; t < T; ++t) a[t] = float((t * 5) % 7) * 0.1f, b[t] = float((t * 3) % 7) * 0.1f;
    a[size_t(f.start_position)] = 10;
    b[size_t(f.end_position)] = 10;
    s.push_back(std::move(a));
    e.push_back(std::move(b));
  }
}

TEST(SquadPostprocess, GoldSpansRoundTripToExactMatch) {
  BERTRT_SKIP_UNDER_EMULATOR();
  BERTRT_REQUIRE_PATH(squad_path());
  const Tokenizer tok = make_tokenizer(true);
  // All 10 articles, natively and under qemu: the 3 fragments below are theirs.
  const auto examples = select_articles(dataset(), 30, 40);
  for (int max_len : {384, 128}) {
    SCOPED_TRACE(max_len);
    SquadFeatureOptions o;
    o.max_seq_length = max_len;
    o.doc_stride = max_len == 384 ? 128 : 64;
    const auto features = make_squad_features(tok, examples, o);
    std::vector<std::vector<float>> s, e;
    perfect_logits(features, s, e);
    const auto preds = postprocess_squad(examples, features, s, e);
    ASSERT_EQ(preds.size(), examples.size());
    std::vector<std::string> texts;
    std::vector<std::vector<std::string>> gold;
    size_t aligned = 0;
    const std::string* spans_of = nullptr;  // the questions of a paragraph share its context
    std::vector<TokenSpan> spans;
    for (size_t i = 0; i < examples.size(); ++i) {
      texts.push_back(preds[i].text);
      gold.emplace_back();
      for (const auto& a : examples[i].answers) gold.back().push_back(a.text);
      // A gold answer that starts or ends inside a piece ("h International Criminal Court ...",
      // annotation fragments of a word) cannot be reproduced by any span of pieces; every other
      // one must come back verbatim.
      const SquadAnswer& a = examples[i].answers[0];
      bool starts = false, ends = false;
      if (!spans_of || *spans_of != examples[i].context) {
        spans = tokenize_with_offsets(tok, examples[i].context);
        spans_of = &examples[i].context;
      }
      for (const TokenSpan& t : spans) {
        starts |= t.begin == a.byte_start;
        ends |= t.end == a.byte_start + a.text.size();
      }
      if (starts && ends) {
        ++aligned;
        EXPECT_EQ(preds[i].text, a.text) << examples[i].id;
      } else {
        std::printf("[ fragment ] %s: gold '%s' is not at piece boundaries; recovered '%s'\n",
                    examples[i].id.c_str(), a.text.c_str(), preds[i].text.c_str());
      }
      // Original text: the context substring, whitespace and case kept.
      ASSERT_EQ(preds[i].text, examples[i].context.substr(size_t(preds[i].byte_begin),
                                                          size_t(preds[i].byte_end - preds[i].byte_begin)));
      ASSERT_FLOAT_EQ(preds[i].score, 20.f);
    }
    const SquadScores sc = squad_scores(texts, gold);
    std::printf("[ figures  ] perfect logits, articles 30-39, max_seq_length %d: EM %.2f F1 %.2f, "
                "%zu/%zu gold answers at piece boundaries\n", max_len, 100 * sc.exact_match,
                100 * sc.f1, aligned, examples.size());
    EXPECT_EQ(aligned, examples.size() - 3);  // the 3 fragments printed above
    // EM over the aligned ones is 1 (checked verbatim above); the 3 fragments miss EM.
    EXPECT_NEAR(sc.exact_match, double(aligned) / double(examples.size()), 1e-12);
  }
}

TEST(SquadPostprocess, RulesOfTheSearch) {
  // One hand-made feature: [CLS] q [SEP] c0 c1 c2 [SEP], context "ab cd ef".
  SquadExample ex;
  ex.context = "ab  cd ef";
  std::vector<SquadExample> examples = {ex};
  SquadFeature f;
  f.input_ids = {101, 7, 102, 1, 2, 3, 102};
  f.token_type_ids = {0, 0, 0, 1, 1, 1, 1};
  f.offset_begin = {-1, -1, -1, 0, 4, 7, -1};
  f.offset_end = {-1, -1, -1, 2, 6, 9, -1};
  f.context_begin = 3;
  f.context_end = 6;
  const std::vector<SquadFeature> feats = {f};
  auto best = [&](std::vector<float> s, std::vector<float> e, SquadPostprocessOptions o = {}) {
    return postprocess_squad(examples, feats, {s}, {e}, o)[0];
  };
  // [CLS] and the question are never answers; end before start is skipped.
  auto p = best({9, 9, 9, 1, 2, 0, 9}, {9, 9, 9, 0, 3, 1, 9});
  EXPECT_EQ(p.text, "cd");  // start c1 (2) + end c1 (3) = 5 beats c0..c1 (1+3)
  EXPECT_FLOAT_EQ(p.score, 5.f);
  p = best({0, 0, 0, 4, 0, 0, 0}, {0, 0, 0, 0, 0, 4, 0});
  EXPECT_EQ(p.text, "ab  cd ef");  // original whitespace kept
  SquadPostprocessOptions two;
  two.max_answer_length = 2;
  p = best({0, 0, 0, 4, 0, 0, 0}, {0, 0, 0, 0, 1, 4, 0}, two);
  EXPECT_EQ(p.text, "ab  cd");  // c0..c2 is 3 pieces > 2: c0..c1 (4+1) wins
  // Probability: softmax over the candidate spans (n_best = all 6 valid here).
  p = best({0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0});
  EXPECT_NEAR(p.probability, 1.0 / 6.0, 1e-6);
  EXPECT_THROW(postprocess_squad(examples, feats, {{1, 2}}, {{1, 2}}), Error);
}

}  // namespace
}  // namespace bertrt
