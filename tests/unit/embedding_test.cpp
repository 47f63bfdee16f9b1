// The sentence-embedding head beyond upstream parity (tests/reference/st_*.py check that): the
// pooling modes on hand-checkable inputs, Dense and normalization, the config's rules, the head in
// the model file, embed_texts' batching and truncation, the retrieval metrics and the STS reader.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "backends/backend.h"
#include "core/error.h"
#include "embed/embedder.h"
#include "embed/embedding_eval.h"
#include "heads/embedding_head.h"
#include "heads/pooling.h"
#include "train/embedding_loss.h"
#include "train/embedding_trainer.h"
#include "io/model_io.h"
#include "test_util.h"

namespace bertrt {
namespace {

// Two sequences of T = 3 tokens, H = 2: the first has a padding position.
const float kHidden[] = {1, -2,  3, 4,  100, 100,   // b0: t0, t1, t2 (padding)
                         -1, 0,  2, -6,  5, 3};      // b1
const int32_t kMask[] = {1, 1, 0, 1, 1, 1};

std::vector<float> pool(PoolingConfig p, const int32_t* prompt = nullptr) {
  std::vector<float> out(size_t(2) * p.modes() * 2);
  pooling_forward(p, kHidden, kMask, prompt, 2, 3, 2, out.data());
  return out;
}

TEST(Pooling, EachModeOnHandCheckedValues) {
  PoolingConfig p;
  p.cls_token = true;
  EXPECT_EQ(pool(p), (std::vector<float>{1, -2, -1, 0}));
  p = {};
  p.max_tokens = true;  // padding never wins, even at 100
  EXPECT_EQ(pool(p), (std::vector<float>{3, 4, 5, 3}));
  p = {};
  p.mean_tokens = true;
  EXPECT_EQ(pool(p), (std::vector<float>{2, 1, 2, -1}));
  p = {};
  p.mean_sqrt_len_tokens = true;
  const std::vector<float> s = pool(p);
  EXPECT_FLOAT_EQ(s[0], 4 / std::sqrt(2.0f));
  EXPECT_FLOAT_EQ(s[3], -3 / std::sqrt(3.0f));
  p = {};
  p.weightedmean_tokens = true;  // weights 1, 2, 3 by position
  const std::vector<float> w = pool(p);
  EXPECT_FLOAT_EQ(w[0], (1 * 1 + 2 * 3) / 3.0f);
  EXPECT_FLOAT_EQ(w[2], (-1 * 1 + 2 * 2 + 5 * 3) / 6.0f);
  p = {};
  p.lasttoken = true;  // the last unmasked token
  EXPECT_EQ(pool(p), (std::vector<float>{3, 4, 5, 3}));
}

TEST(Pooling, SeveralModesConcatenateInUpstreamOrder) {
  PoolingConfig p;
  p.mean_tokens = p.cls_token = p.max_tokens = true;
  EXPECT_EQ(p.modes(), 3);
  EXPECT_EQ(p.mode_string(), "cls+mean+max");
  // cls, max, mean (Pooling.forward's order)
  EXPECT_EQ(pool(p), (std::vector<float>{1, -2, 3, 4, 2, 1, -1, 0, 5, 3, 2, -1}));
}

TEST(Pooling, IncludePromptFalseLeavesThePromptOut) {
  PoolingConfig p;
  p.mean_tokens = true;
  p.include_prompt = false;
  const int32_t prompt[] = {1, 2};  // b0 skips [CLS]; b1 skips two positions
  EXPECT_EQ(pool(p, prompt), (std::vector<float>{3, 4, 5, 3}));
  p.include_prompt = true;  // the prompt lengths are then ignored
  EXPECT_EQ(pool(p, prompt), (std::vector<float>{2, 1, 2, -1}));
  // Nothing left (the whole sequence is prompt): mean clamps its count, lasttoken reads zero.
  const int32_t all[] = {3, 3};
  p.include_prompt = false;
  EXPECT_EQ(pool(p, all), (std::vector<float>{0, 0, 0, 0}));
  p.mean_tokens = false;
  p.lasttoken = true;
  EXPECT_EQ(pool(p, all), (std::vector<float>{0, 0, 0, 0}));
}

TEST(EmbeddingHead, DenseThenTruncateAndNormalize) {
  EmbeddingConfig e;
  e.pooling.mean_tokens = true;
  e.dense.push_back({"2_Dense", 2, 3, true, "torch.nn.modules.linear.Identity"});
  e.dense.push_back({"3_Dense", 3, 2, false, "torch.nn.modules.activation.ReLU"});
  ParamLayout layout({{"2_Dense.linear.weight", {3, 2}}, {"2_Dense.linear.bias", {3}},
                      {"3_Dense.linear.weight", {2, 3}}});
  std::vector<float> params(layout.total());
  const float w1[] = {1, 0, 0, 1, 1, 1}, b1[] = {0.5f, 0, -1}, w2[] = {1, 1, 1, -1, 0, 0};
  std::copy(w1, w1 + 6, params.begin() + layout.at("2_Dense.linear.weight").offset);
  std::copy(b1, b1 + 3, params.begin() + layout.at("2_Dense.linear.bias").offset);
  std::copy(w2, w2 + 6, params.begin() + layout.at("3_Dense.linear.weight").offset);
  const float pooled[] = {2, 1};
  // [2, 1] → [2.5, 1, 2] → relu([5.5, -2.5]) = [5.5, 0]
  const std::vector<float> y = dense_forward(e, layout, params.data(), pooled, 1, 2);
  EXPECT_EQ(y, (std::vector<float>{5.5f, 0}));
  EXPECT_EQ(finish_embeddings(y, 1, 2, 0, true), (std::vector<float>{1, 0}));
  EXPECT_EQ(finish_embeddings({3, 4, 12}, 1, 3, 2, true), (std::vector<float>{0.6f, 0.8f}));
  EXPECT_EQ(finish_embeddings({3, 4, 12}, 1, 3, 2, false), (std::vector<float>{3, 4}));
  EXPECT_EQ(finish_embeddings({0, 0}, 1, 2, 0, true), (std::vector<float>{0, 0}));  // eps, no NaN
}

TEST(EmbeddingConfig, RefusesInconsistentHeads) {
  EmbeddingConfig e;
  EXPECT_THROW(e.validate(8, 16), Error);  // no pooling mode
  e.pooling.cls_token = e.pooling.mean_tokens = true;
  e.validate(8, 16);
  EXPECT_EQ(e.dim(8), 16);
  e.dense.push_back({"2_Dense", 8, 4, true, "torch.nn.modules.activation.Tanh"});
  EXPECT_THROW(e.validate(8, 16), Error);  // in_features 8, the pooled vector has 16
  e.dense[0].in_features = 16;
  e.validate(8, 16);
  EXPECT_EQ(e.dim(8), 4);
  e.dense[0].activation_function = "torch.nn.modules.activation.Softmax";
  EXPECT_THROW(e.validate(8, 16), Error);
  e.dense[0].activation_function = "torch.nn.modules.activation.Tanh";
  e.max_seq_length = 17;
  EXPECT_THROW(e.validate(8, 16), Error);
  e.max_seq_length = 0;
  e.default_prompt_name = "query";
  EXPECT_THROW(e.validate(8, 16), Error);
  e.prompts = {{"query", "query: "}};
  e.validate(8, 16);
  e.prompts.push_back({"query", "q: "});
  EXPECT_THROW(e.validate(8, 16), Error);
}

BertConfig tiny_config() {
  BertConfig c;
  c.vocab_size = 13;
  c.hidden_size = 8;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.intermediate_size = 11;
  c.max_position_embeddings = 16;
  return c;
}

TokenizerSpec tiny_vocab() {
  TokenizerSpec s;
  s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e", "f", "g", "h"};
  return s;
}

EmbeddingConfig full_head() {
  EmbeddingConfig e;
  e.pooling.weightedmean_tokens = e.pooling.lasttoken = true;
  e.pooling.include_prompt = false;
  e.dense.push_back({"2_Dense", 16, 5, true, "torch.nn.modules.activation.Tanh"});
  e.normalize = true;
  e.max_seq_length = 6;
  e.do_lower_case = true;
  e.prompts = {{"query", "a "}, {"passage", "b "}};
  e.default_prompt_name = "passage";
  e.similarity_fn_name = "dot";
  return e;
}

// save_model → load_model keeps every field of the head and the Dense weights.
TEST(EmbeddingFile, SaveLoadRoundTrip) {
  HeadsConfig h;
  h.embedding = full_head();
  BertModel m(tiny_config(), h);
  m.init_weights(3);
  test::TempDir dir;
  const std::string path = dir.file("m.brt");
  save_model(path, m, *make_tokenizer(tiny_vocab()), {});
  const LoadedModel l = load_model(path);
  ASSERT_TRUE(l.model->heads().embedding);
  const EmbeddingConfig& e = *l.model->heads().embedding;
  const EmbeddingConfig want = full_head();
  EXPECT_EQ(e.pooling.mode_string(), want.pooling.mode_string());
  EXPECT_FALSE(e.pooling.include_prompt);
  ASSERT_EQ(e.dense.size(), 1u);
  EXPECT_EQ(e.dense[0].path, "2_Dense");
  EXPECT_EQ(e.dense[0].out_features, 5);
  EXPECT_EQ(e.dense[0].activation_function, want.dense[0].activation_function);
  EXPECT_TRUE(e.normalize);
  EXPECT_EQ(e.max_seq_length, 6);
  EXPECT_TRUE(e.do_lower_case);
  EXPECT_EQ(e.prompts, want.prompts);
  EXPECT_EQ(e.default_prompt_name, "passage");
  EXPECT_EQ(e.similarity_fn_name, "dot");
  ASSERT_TRUE(l.model->layout().find("2_Dense.linear.weight"));
  ASSERT_EQ(l.model->layout().total(), m.layout().total());
  EXPECT_TRUE(std::equal(m.params(), m.params() + m.layout().total(), l.model->params()));
}

struct Embedder : ::testing::Test {
  Embedder() {
    HeadsConfig h;
    h.embedding = EmbeddingConfig{};
    h.embedding->pooling.mean_tokens = true;
    h.embedding->max_seq_length = 6;
    model = std::make_unique<BertModel>(tiny_config(), h);
    model->init_weights(11);
    tokenizer = make_tokenizer(tiny_vocab());
    be = make_backend("reference");
  }
  std::vector<float> embed(const std::vector<std::string>& texts, EmbedOptions o = {},
                           EmbedStats* st = nullptr) {
    return embed_texts(*model, *tokenizer, *be, texts, o, st);
  }
  std::unique_ptr<BertModel> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Backend> be;
};

// Batches sort by length and pad; each text's embedding is the one it gets alone.
TEST_F(Embedder, BatchingAndPaddingChangeNothing) {
  const std::vector<std::string> texts = {"a b c", "", "d", "a b c d e f g h", "e f"};
  EmbedOptions o;
  o.batch_size = 3;
  EmbedStats st;
  const std::vector<float> all = embed(texts, o, &st);
  EXPECT_EQ(st.truncated, 1u);  // 10 pieces with [CLS]/[SEP], max_seq_length 6
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<float> one = embed({texts[i]});
    for (int c = 0; c < 8; ++c) EXPECT_NEAR(all[i * 8 + c], one[size_t(c)], 1e-6f) << i;
  }
}

TEST_F(Embedder, DimensionsAndPromptsAreChecked) {
  EmbedOptions o;
  o.dimensions = 9;
  EXPECT_THROW(embed({"a"}, o), Error);
  o.dimensions = 3;
  const std::vector<float> e = embed({"a"}, o);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_NEAR(e[0] * e[0] + e[1] * e[1] + e[2] * e[2], 1.0, 1e-6);
  o = {};
  o.prompt_name = "query";
  EXPECT_THROW(embed({"a"}, o), Error);  // the model has no prompts
  o = {};
  o.prompt = "b ";  // a literal prompt is the same as writing it before the text
  const std::vector<float> with = embed({"a"}, o), same = embed({"b a"});
  for (int c = 0; c < 8; ++c) EXPECT_EQ(with[size_t(c)], same[size_t(c)]);
  EXPECT_THROW(embed({"\xff"}), Error);
}

TEST(RetrievalMetrics, FromRanks) {
  // ranks 1, 2, 11: hit@1 1/3, hit@3 2/3; mrr@10 (1 + 1/2) / 3; ndcg@10 (1 + 1/log2 3) / 3.
  const EmbeddingMetrics m = retrieval_metrics({1, 2, 11});
  auto get = [&](const std::string& k) {
    for (const auto& [name, v] : m)
      if (name == k) return v;
    ADD_FAILURE() << k;
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(get("cosine_accuracy@1"), 1.0 / 3);
  EXPECT_DOUBLE_EQ(get("cosine_recall@3"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(get("cosine_precision@3"), 2.0 / 9);
  EXPECT_DOUBLE_EQ(get("cosine_mrr@10"), 0.5);
  EXPECT_DOUBLE_EQ(get("cosine_ndcg@10"), (1 + 1 / std::log2(3.0)) / 3);
  EXPECT_DOUBLE_EQ(get("cosine_map@100"), (1 + 0.5 + 1.0 / 11) / 3);
}

TEST(StsTsv, ReadsGlueStsbAndRefusesBadLines) {
  test::TempDir dir;
  const std::string path = dir.file("s.tsv");
  auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  write("index\tsentence1\tsentence2\tscore\n0\ta b\tc\t4.5\n1\td\te\t0\n");
  const std::vector<StsPair> p = read_sts_tsv(path);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].sentence1, "a b");
  EXPECT_EQ(p[1].score, 0);
  write("sentence1\tsentence2\n");
  EXPECT_THROW(read_sts_tsv(path), Error);  // no score column
  write("sentence1\tsentence2\tscore\na\tb\tx\nc\td\t1\n");
  EXPECT_THROW(read_sts_tsv(path), Error);  // x is not a number
  write("sentence1\tsentence2\tscore\na\tb\t1\n");
  EXPECT_THROW(read_sts_tsv(path), Error);  // one pair
}

TEST(StsTsv, ReadsGlueStsbDev) {
  const std::string path = test::data_dir() + "/glue/STS-B/dev.tsv";
  BERTRT_REQUIRE_PATH(path);
  const std::vector<StsPair> p = read_sts_tsv(path);
  ASSERT_EQ(p.size(), 1500u);
  EXPECT_EQ(p[0].sentence1, "A man with a hard hat is dancing.");
  EXPECT_EQ(p[0].score, 5.0);
}

}  // namespace
}  // namespace bertrt

namespace bertrt {
namespace {

// The losses' gradients against central differences, all in double (the loss code's own
// precision). With h = 1e-2 the differences' O(h²) truncation error is about 1e-4 of these
// losses' scale; the bound, 2e-3 of the largest gradient, sits above it.
TEST(EmbeddingLoss, GradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> nd;
  const int N = 4, D = 6;
  auto make = [&](int k) {
    std::vector<std::vector<float>> c(size_t(k), std::vector<float>(size_t(N) * D));
    for (auto& col : c)
      for (float& x : col) x = float(nd(rng));
    return c;
  };
  struct Case {
    const char* name;
    EmbeddingLoss loss;
    int cols;
  };
  EmbeddingLoss mnrl, cosent, cosine, matryoshka;
  cosent.kind = EmbeddingLossKind::kCosent;
  cosine.kind = EmbeddingLossKind::kCosine;
  matryoshka.matryoshka_dims = {6, 3};
  matryoshka.matryoshka_weights = {1.0, 0.5};
  const Case cases[] = {{"mnrl", mnrl, 2}, {"mnrl+negatives", mnrl, 3}, {"cosent", cosent, 2},
                        {"cosine", cosine, 2}, {"matryoshka", matryoshka, 3}};
  const std::vector<double> labels = {0.2, 0.9, 0.2, 0.5};  // a tie: no term between rows 0 and 2
  for (const Case& c : cases) {
    std::vector<std::vector<float>> cols = make(c.cols), grads, scratch;
    embedding_loss(c.loss, cols, N, D, labels, grads);
    double gmax = 0;
    for (const auto& g : grads)
      for (float x : g) gmax = std::max(gmax, double(std::abs(x)));
    ASSERT_GT(gmax, 0) << c.name;
    for (int k = 0; k < c.cols; ++k)
      for (int i = 0; i < N * D; i += 5) {
        const float x0 = cols[size_t(k)][size_t(i)];
        const float h = 1e-2f;  // exactly representable steps: x0 ± h rounds the same way each run
        cols[size_t(k)][size_t(i)] = x0 + h;
        const double up = embedding_loss(c.loss, cols, N, D, labels, scratch);
        cols[size_t(k)][size_t(i)] = x0 - h;
        const double down = embedding_loss(c.loss, cols, N, D, labels, scratch);
        cols[size_t(k)][size_t(i)] = x0;
        const double h_used = (double(x0 + h) - double(x0 - h)) / 2;
        EXPECT_NEAR(grads[size_t(k)][size_t(i)], (up - down) / (2 * h_used), 2e-3 * gmax)
            << c.name << " column " << k << " value " << i;
      }
  }
}

// Hand-checkable values: two orthogonal pairs, scale 1.
TEST(EmbeddingLoss, ValuesOnHandCheckedInputs) {
  const std::vector<std::vector<float>> cols = {{1, 0, 0, 1}, {1, 0, 0, 1}};  // u = v, rows e1, e2
  std::vector<std::vector<float>> g;
  EmbeddingLoss mnrl;
  mnrl.scale = 1;
  // Each anchor: its positive scores 1, the other 0: CE = log(e + 1) - 1.
  EXPECT_NEAR(embedding_loss(mnrl, cols, 2, 2, {}, g), std::log(std::exp(1.0) + 1) - 1, 1e-12);
  EmbeddingLoss cosine;
  cosine.kind = EmbeddingLossKind::kCosine;
  EXPECT_NEAR(embedding_loss(cosine, cols, 2, 2, {1.0, 0.5}, g), (0 + 0.25) / 2, 1e-12);
  EmbeddingLoss cosent;
  cosent.kind = EmbeddingLossKind::kCosent;
  cosent.scale = 1;
  // cos = 1 for both rows; y0 < y1 gives one term s0 − s1 = 0: log(1 + e^0) = log 2.
  EXPECT_NEAR(embedding_loss(cosent, cols, 2, 2, {0.0, 1.0}, g), std::log(2.0), 1e-12);
  EXPECT_THROW(embedding_loss(cosent, {cols[0]}, 2, 2, {0.0, 1.0}, g), Error);
  EmbeddingLoss bad;
  bad.matryoshka_dims = {3};
  EXPECT_THROW(embedding_loss(bad, cols, 2, 2, {}, g), Error);
}

}  // namespace
}  // namespace bertrt

namespace bertrt {
namespace {

// The whole step: encoder, pooling, Dense (Tanh), Normalize and the loss, its gradient against
// central differences of the float32 loss on the reference backend. h = 1e-2 on weights of size
// ~0.02–1: float32 rounding of a loss near 1 (6e-8) over 2h is 3e-6, truncation O(h²) ~1e-4; the
// bound is 3e-2 of the largest gradient checked plus 1e-3.
TEST(EmbeddingTraining, StepGradientMatchesFiniteDifferences) {
  HeadsConfig h;
  h.embedding = EmbeddingConfig{};
  h.embedding->pooling.mean_tokens = h.embedding->pooling.cls_token = true;
  h.embedding->dense.push_back({"2_Dense", 16, 6, true, "torch.nn.modules.activation.Tanh"});
  h.embedding->normalize = true;
  BertModel model(tiny_config(), h);
  model.init_weights(17);
  for (const ParamInfo& p : model.layout().params())  // larger weights: gradients well above noise
    if (p.name.find("LayerNorm") == std::string::npos)
      for (size_t i = 0; i < p.numel; ++i) model.params()[p.offset + i] *= 20;
  const auto tok = make_tokenizer(tiny_vocab());
  auto be = make_backend("reference");
  const std::vector<PairRow> rows = {{{"a b c", "a b"}, 0}, {{"d e", "f"}, 0}, {{"g h a", "h"}, 0}};
  EmbeddingLoss loss;
  loss.scale = 5;
  model.zero_grad();
  embedding_forward_backward(model, *tok, *be, loss, rows);
  const std::vector<float> g(model.grads(), model.grads() + model.layout().total());
  auto f = [&] {
    model.zero_grad();
    return embedding_forward_backward(model, *tok, *be, loss, rows);
  };
  for (const char* name : {"2_Dense.linear.weight", "2_Dense.linear.bias",
                           "bert.encoder.layer.0.attention.self.query.weight",
                           "bert.encoder.layer.0.output.dense.weight",
                           "bert.embeddings.word_embeddings.weight", "bert.embeddings.LayerNorm.weight"}) {
    const ParamInfo& p = model.layout().at(name);
    double gmax = 0;
    for (size_t i = 0; i < p.numel; ++i) gmax = std::max(gmax, double(std::abs(g[p.offset + i])));
    ASSERT_GT(gmax, 0) << name;
    for (size_t i = 0; i < p.numel; i += std::max<size_t>(1, p.numel / 7)) {
      float& w = model.params()[p.offset + i];
      const float w0 = w, step = 1e-2f;
      w = w0 + step;
      const double up = f();
      w = w0 - step;
      const double down = f();
      w = w0;
      EXPECT_NEAR(g[p.offset + i], (up - down) / (double(w0 + step) - double(w0 - step)),
                  3e-2 * gmax + 1e-3) << name << "[" << i << "]";
    }
  }
  // The pooler is not on the embedding's path: no gradient.
  const ParamInfo& pool = model.layout().at("bert.pooler.dense.weight");
  for (size_t i = 0; i < pool.numel; ++i) ASSERT_EQ(g[pool.offset + i], 0.0f);
}

TEST(EmbeddingTraining, PairFilesAndTheirErrors) {
  test::TempDir dir;
  const std::string path = dir.file("p.tsv");
  auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  write("anchor\tpositive\tnegative\na\tb\tc\nd\te\tf\n");
  PairData d = read_pair_file(path);
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.rows[1].texts, (std::vector<std::string>{"d", "e", "f"}));
  EXPECT_FALSE(d.scored);
  write("sentence1\tsentence2\tscore\na\tb\t0.5\nc\td\t1\n");
  d = read_pair_file(path);
  EXPECT_TRUE(d.scored);
  EXPECT_EQ(d.rows[0].score, 0.5);
  write("sentence1\tsentence2\tscore\na\tb\t3\nc\td\t1\n");
  EXPECT_THROW(read_pair_file(path), Error);  // 3 is outside [0, 1]
  PairFileOptions o;
  o.score_lo = 0, o.score_hi = 5;
  EXPECT_EQ(read_pair_file(path, o).rows[0].score, 0.6);
  write("text\tlabel\na\t1\nb\t0\n");
  EXPECT_THROW(read_pair_file(path), Error);  // neither layout
  write("anchor\tpositive\na\tb\n");
  EXPECT_THROW(read_pair_file(path), Error);  // one row
  // JSON Lines: the TSV's names as keys, negatives in the first object's order; errors name the
  // file and line.
  const std::string jl = dir.file("p.jsonl");
  auto write_jl = [&](const std::string& text) { std::ofstream(jl) << text; };
  auto error_of = [&](const std::string& text) -> std::string {
    write_jl(text);
    try {
      read_pair_file(jl);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  write_jl("\xEF\xBB\xBF{\"anchor\": \"a\", \"positive\": \"b\", \"negative_2\": \"n2\", "
           "\"negative\": \"n\"}\n\n{\"negative\": \"m\", \"positive\": \"d\", \"anchor\": \"c\", "
           "\"negative_2\": \"m2\", \"id\": 7}\n");
  d = read_pair_file(jl);
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_FALSE(d.scored);
  EXPECT_EQ(d.rows[0].texts, (std::vector<std::string>{"a", "b", "n2", "n"}));
  EXPECT_EQ(d.rows[1].texts, (std::vector<std::string>{"c", "d", "m2", "m"}));
  write_jl("{\"sentence1\": \"a\", \"sentence2\": \"b\", \"score\": 4}\n"
           "{\"sentence1\": \"c\", \"sentence2\": \"d\", \"score\": 0.5}\n");
  EXPECT_THROW(read_pair_file(jl), Error);  // 4 is outside [0, 1]
  d = read_pair_file(jl, o);
  EXPECT_TRUE(d.scored);
  EXPECT_EQ(d.rows[0].score, 0.8);
  EXPECT_EQ(d.rows[1].score, 0.1);
  const std::string two = "{\"anchor\": \"a\", \"positive\": \"b\"}\n";
  EXPECT_NE(error_of(two + "{\"anchor\": \"c\"}\n").find(jl + ": line 2: no \"positive\""),
            std::string::npos) << error_of(two + "{\"anchor\": \"c\"}\n");
  EXPECT_NE(error_of(two + two + "{\"anchor\": 3, \"positive\": \"d\"}\n")
                .find(": line 3: \"anchor\" is 3, expected a string"), std::string::npos);
  EXPECT_NE(error_of(two + "{\"anchor\": \"c\",\n").find(": line 2: not JSON"), std::string::npos);
  EXPECT_NE(error_of(two + "[1, 2]\n").find(": line 2: expected a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{\"text\": \"a\", \"label\": 1}\n" + two).find(": line 1: the object's keys name neither"),
            std::string::npos);
  EXPECT_NE(error_of("{\"sentence1\": \"a\", \"sentence2\": \"b\", \"score\": 0}\n"
                     "{\"sentence1\": \"a\", \"sentence2\": \"b\", \"score\": \"1\"}\n")
                .find(": line 2: \"score\" is \"1\", expected a number"), std::string::npos);
  EXPECT_NE(error_of(two).find("1 training row(s)"), std::string::npos);
  const std::string stsb = test::data_dir() + "/glue/STS-B/train.tsv";
  if (test::have_data(stsb)) {
    const PairData s = read_pair_file(stsb);  // scores 0–5 mapped to [0, 1]
    EXPECT_EQ(s.rows.size(), 5749u);
    EXPECT_TRUE(s.scored);
  }
}

}  // namespace
}  // namespace bertrt
