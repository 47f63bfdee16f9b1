// The sentence-embedding head beyond upstream parity (tests/reference/st_*.py check that): the
// pooling modes on hand-checkable inputs, Dense and normalization, the config's rules, the head in
// the model file, embed_texts' batching and truncation, the retrieval metrics and the STS reader.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "backends/backend.h"
#include "core/error.h"
#include "embed/embedder.h"
#include "embed/embedding_eval.h"
#include "heads/embedding_head.h"
#include "heads/pooling.h"
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
