// Reranker fine-tuning (train/reranker_trainer.h): the step's gradient (encoder, pooler and the
// one-output classifier under BCEWithLogitsLoss) against finite differences, with and without
// dropout; the data readers and their errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "backends/backend.h"
#include "core/error.h"
#include "io/model_io.h"
#include "model/bert_model.h"
#include "test_util.h"
#include "train/reranker_trainer.h"

namespace bertrt {
namespace {

BertConfig small_config() {
  BertConfig c;
  c.vocab_size = 13, c.hidden_size = 8, c.num_hidden_layers = 1, c.num_attention_heads = 2;
  c.intermediate_size = 11, c.max_position_embeddings = 16;
  return c;
}

TokenizerSpec small_vocab() {
  TokenizerSpec s;
  s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e", "f", "g", "h"};
  return s;
}

// Central differences of the float32 loss: h = 1e-2 on weights of size ~0.2–1, float32 rounding
// of a loss near 0.7 over 2h ~3e-6, truncation O(h²); bound 3e-2 of the largest gradient checked
// plus 1e-3 (as embedding_test's step check).
TEST(RerankerTraining, StepGradientMatchesFiniteDifferences) {
  for (float p : {0.0f, 0.3f}) {
    HeadsConfig h;
    h.kind = HeadKind::kRegression;
    BertModel model(small_config(), h);
    model.init_weights(9);
    for (const ParamInfo& q : model.layout().params())
      if (q.name.find("LayerNorm") == std::string::npos)
        for (size_t i = 0; i < q.numel; ++i) model.params()[q.offset + i] *= 10;
    model.set_dropout({p, 3, uint64_t(2) << 16, 0.0f});
    const auto tok = make_tokenizer(small_vocab());
    auto be = make_backend("reference");
    const std::vector<PairRow> rows = {{{"a b", "c d e"}, 1.0}, {{"a b", "f"}, 0.0},
                                       {{"g", "h a b c"}, 0.25}};
    auto f = [&] {
      model.zero_grad();
      return reranker_forward_backward(model, *tok, *be, rows, 6);  // truncates the last pair
    };
    f();
    const std::vector<float> g(model.grads(), model.grads() + model.layout().total());
    for (const char* name : {"classifier.weight", "classifier.bias", "bert.pooler.dense.weight",
                             "bert.pooler.dense.bias", "bert.encoder.layer.0.output.dense.weight",
                             "bert.embeddings.token_type_embeddings.weight"}) {
      const ParamInfo& q = model.layout().at(name);
      double gmax = 0;
      for (size_t i = 0; i < q.numel; ++i) gmax = std::max(gmax, double(std::abs(g[q.offset + i])));
      ASSERT_GT(gmax, 0) << name;
      for (size_t i = 0; i < q.numel; i += std::max<size_t>(1, q.numel / 6)) {
        float& w = model.params()[q.offset + i];
        const float w0 = w, step = 1e-2f;
        w = w0 + step;
        const double up = f();
        w = w0 - step;
        const double down = f();
        w = w0;
        EXPECT_NEAR(g[q.offset + i], (up - down) / (double(w0 + step) - double(w0 - step)),
                    3e-2 * gmax + 1e-3)
            << name << "[" << i << "] dropout " << p;
      }
    }
  }
}

TEST(RerankerTraining, RefusesOtherHeads) {
  HeadsConfig h;
  h.labels = {"x", "y"};
  BertModel model(small_config(), h);
  model.init_weights(1);
  const auto tok = make_tokenizer(small_vocab());
  auto be = make_backend("cpu");
  EXPECT_THROW(reranker_forward_backward(model, *tok, *be, {{{"a", "b"}, 1.0}, {{"a", "c"}, 0.0}}, 0),
               Error);
}

TEST(RerankerTraining, FilesAndTheirErrors) {
  test::TempDir dir;
  const std::string path = dir.file("r.tsv");
  auto error_of = [&](const std::string& text) -> std::string {
    std::ofstream(path) << text;
    try {
      read_rerank_file(path, {}, 1);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  std::ofstream(path) << "id\tquery\tpassage\tlabel\n1\tq\tp\t1\n2\tq\tn\t0\n3\tr\ts\t0.5\n";
  const PairData d = read_rerank_file(path, {}, 1);
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_EQ(d.rows[1].texts, (std::vector<std::string>{"q", "n"}));
  EXPECT_EQ(d.rows[2].score, 0.5);
  EXPECT_NE(error_of("query\tpassage\tlabel\nq\tp\t1\nq\tn\t2\n").find("r.tsv: line 3: label 2 is outside [0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of("query\tpassage\tlabel\nq\tp\tyes\nq\tn\t0\n").find("line 2: label 'yes' is not a number"),
            std::string::npos);
  EXPECT_NE(error_of("query\tpassage\tscore\nq\tp\t1\n").find("line 1: the header's columns name no label"),
            std::string::npos);
  EXPECT_NE(error_of("query\tpassage\tlabel\nq\tp\n").find("line 2: 2 tab-separated fields"),
            std::string::npos);
  const std::string squad = test::data_dir() + "/squad_v1.1/dev-v1.1-articles-00-39.json";
  if (test::have_data(squad)) {
    const PairData s = read_rerank_file(squad, parse_article_range("0-1", "--train-articles"), 5, 2);
    ASSERT_EQ(s.rows.size() % 3, 0u);
    for (size_t i = 0; i < s.rows.size(); i += 3) {
      EXPECT_EQ(s.rows[i].score, 1.0);
      for (size_t k = 1; k < 3; ++k) {
        EXPECT_EQ(s.rows[i + k].texts[0], s.rows[i].texts[0]);
        EXPECT_EQ(s.rows[i + k].score, 0.0);
        EXPECT_NE(s.rows[i + k].texts[1], s.rows[i].texts[1]);
      }
    }
    EXPECT_THROW(read_rerank_file(squad, parse_article_range("3", "--train-articles"), 5), Error);
  }
}

}  // namespace
}  // namespace bertrt
