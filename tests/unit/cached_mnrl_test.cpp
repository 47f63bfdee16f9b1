// cached-mnrl (train/cached_mnrl.h, GradCache): the same loss and gradients as mnrl on the same
// batch for every mini-batch size, Matryoshka dimensions and hard negatives included; with
// dropout, a gradient that matches finite differences of the loss the cached step computes (so the
// re-embedding used the first pass's masks); the errors. Upstream parity is in
// st_training_reference_test (CachedMultipleNegativesRankingLoss against the library).
#include <gtest/gtest.h>

#include <cmath>

#include "backends/backend.h"
#include "core/error.h"
#include "io/model_io.h"
#include "model/bert_model.h"
#include "train/cached_mnrl.h"
#include "train/embedding_trainer.h"
#include "train/trainer.h"

namespace bertrt {
namespace {

BertConfig small_config() {
  BertConfig c;
  c.vocab_size = 13, c.hidden_size = 8, c.num_hidden_layers = 2, c.num_attention_heads = 2;
  c.intermediate_size = 11, c.max_position_embeddings = 16;
  return c;
}

TokenizerSpec small_vocab() {
  TokenizerSpec s;
  s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e", "f", "g", "h"};
  return s;
}

struct CachedMnrl : ::testing::Test {
  CachedMnrl() {
    HeadsConfig h;
    h.embedding = EmbeddingConfig{};
    h.embedding->pooling.mean_tokens = true;
    h.embedding->dense.push_back({"2_Dense", 8, 6, true, "torch.nn.modules.activation.Tanh"});
    h.embedding->normalize = true;
    model = std::make_unique<BertModel>(small_config(), h);
    model->init_weights(5);
    for (const ParamInfo& p : model->layout().params())  // larger weights: gradients above noise
      if (p.name.find("LayerNorm") == std::string::npos)
        for (size_t i = 0; i < p.numel; ++i) model->params()[p.offset + i] *= 10;
    tok = make_tokenizer(small_vocab());
    be = make_backend("cpu");
  }
  // The loss and a copy of the gradients of one step's forward and backward from zero.
  double run(const EmbeddingLoss& loss, int mini_batch, std::vector<float>& g) {
    model->zero_grad();
    const double v = mini_batch > 0
                         ? cached_mnrl_forward_backward(*model, *tok, *be, loss, rows, mini_batch)
                         : embedding_forward_backward(*model, *tok, *be, loss, rows);
    g.assign(model->grads(), model->grads() + model->layout().total());
    return v;
  }
  std::unique_ptr<BertModel> model;
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<Backend> be;
  // Texts of 1 to 5 words: every mini-batch pads to another length than the whole batch.
  std::vector<PairRow> rows = {{{"a b c", "a b", "h"}, 0},
                               {{"d e", "f g h e d", "a"}, 0},
                               {{"g h a", "h", "b c"}, 0},
                               {{"c", "c d e f", "g g"}, 0},
                               {{"e f g h", "a c", "d"}, 0}};
};

// Float32 encoder arithmetic in another batch shape (padding changes the GEMM blocking, never a
// value that enters a sum): the losses agree to 1e-6 relative and every gradient entry to 1e-5 of
// the largest (rounding of sums of at most ~40 float32 terms is ~1e-6 relative).
TEST_F(CachedMnrl, EqualsMnrlOnTheSameBatch) {
  for (const std::vector<int>& dims : {std::vector<int>{}, std::vector<int>{6, 4, 2}}) {
    for (int columns : {2, 3}) {  // (anchor, positive) and a hard negative
      std::vector<PairRow> all = rows;
      for (PairRow& r : rows) r.texts.resize(size_t(columns));
      EmbeddingLoss loss;
      loss.matryoshka_dims = dims;
      std::vector<float> want, got;
      const double l0 = run(loss, 0, want);
      double gmax = 0;
      for (float x : want) gmax = std::max(gmax, double(std::abs(x)));
      ASSERT_GT(gmax, 1e-3);
      for (int mb : {1, 2, 3, 5, 32}) {
        const double l1 = run(loss, mb, got);
        EXPECT_NEAR(l1, l0, 1e-6 * std::abs(l0)) << "mini-batch " << mb;
        double worst = 0;
        for (size_t i = 0; i < want.size(); ++i)
          worst = std::max(worst, std::abs(double(got[i]) - double(want[i])));
        EXPECT_LT(worst, 1e-5 * gmax) << "mini-batch " << mb << ", " << columns << " columns, "
                                      << dims.size() << " matryoshka dims";
      }
      rows = all;
    }
  }
}

// With dropout each mini-batch draws its own masks; the second pass must draw the first's, or the
// cached gradient would belong to other embeddings. Central differences of the loss the cached
// step returns (the masks are fixed by the seed and step, so it is a smooth function of the
// weights) against its gradient: h = 1e-2, float32 rounding of the loss over 2h ~3e-6, truncation
// O(h²); bound 3e-2 of the largest gradient checked plus 1e-3 (as embedding_test's step check).
TEST_F(CachedMnrl, DropoutMasksAreReplayedInTheSecondPass) {
  be = make_backend("reference");
  EmbeddingLoss loss;
  loss.scale = 5;
  std::vector<float> g, g0;
  model->set_dropout({0.0f, 7, uint64_t(3) << 16, 0.0f});
  const double plain = run(loss, 2, g0);
  model->set_dropout({0.2f, 7, uint64_t(3) << 16, 0.0f});
  const double dropped = run(loss, 2, g);
  EXPECT_GT(std::abs(dropped - plain), 1e-3);  // the masks change the loss: the check is not vacuous
  EXPECT_EQ(model->dropout().step, uint64_t(3) << 16);  // restored after the step
  const std::vector<float> grads = g;
  auto f = [&] {
    model->zero_grad();
    return cached_mnrl_forward_backward(*model, *tok, *be, loss, rows, 2);
  };
  for (const char* name : {"2_Dense.linear.weight", "bert.encoder.layer.1.output.dense.weight",
                           "bert.encoder.layer.0.attention.self.query.weight",
                           "bert.embeddings.word_embeddings.weight"}) {
    const ParamInfo& p = model->layout().at(name);
    double gmax = 0;
    for (size_t i = 0; i < p.numel; ++i) gmax = std::max(gmax, double(std::abs(grads[p.offset + i])));
    ASSERT_GT(gmax, 0) << name;
    for (size_t i = 0; i < p.numel; i += std::max<size_t>(1, p.numel / 5)) {
      float& w = model->params()[p.offset + i];
      const float w0 = w, step = 1e-2f;
      w = w0 + step;
      const double up = f();
      w = w0 - step;
      const double down = f();
      w = w0;
      EXPECT_NEAR(grads[p.offset + i], (up - down) / (double(w0 + step) - double(w0 - step)),
                  3e-2 * gmax + 1e-3)
          << name << "[" << i << "]";
    }
  }
}

// Through the trainer (finetune_embeddings with loss.mini_batch_size): the step reports mnrl's
// loss and gradient norm (AdamW's first update is ~lr·sign(g), which rounding noise in a
// near-zero gradient entry flips, so the weights are not the place to compare).
TEST_F(CachedMnrl, TrainerStepEqualsMnrl) {
  PairData data;
  data.rows = rows;
  for (PairRow& r : data.rows) r.texts.resize(2);
  const std::vector<float> start(model->params(), model->params() + model->layout().total());
  std::vector<StepResult> results;
  for (int mb : {0, 2}) {
    std::copy(start.begin(), start.end(), model->params());
    OptimOptions opt;
    opt.learning_rate = 1e-3f;
    opt.total_steps = 1;
    Trainer trainer(*model, *be, opt);
    EmbeddingLoss loss;
    loss.mini_batch_size = mb;
    finetune_embeddings(trainer, *model, *tok, *be, loss, data, 5, 1, 42,
                        [&](const EmbeddingStepLog& s) { results.push_back(s.result); });
  }
  ASSERT_EQ(results.size(), 2u);
  EXPECT_NEAR(results[1].fwd.loss, results[0].fwd.loss, 1e-6 * results[0].fwd.loss);
  EXPECT_GT(results[0].grad_norm, 1e-3);
  EXPECT_NEAR(results[1].grad_norm, results[0].grad_norm, 1e-5 * results[0].grad_norm);
}

TEST_F(CachedMnrl, Errors) {
  EmbeddingLoss loss;
  EXPECT_THROW(cached_mnrl_forward_backward(*model, *tok, *be, loss, rows, 0), Error);
  loss.kind = EmbeddingLossKind::kCosent;
  EXPECT_THROW(cached_mnrl_forward_backward(*model, *tok, *be, loss, rows, 2), Error);
  loss.kind = EmbeddingLossKind::kMnrl;
  std::vector<PairRow> one = {{{"a"}, 0}, {{"b"}, 0}};
  EXPECT_THROW(cached_mnrl_forward_backward(*model, *tok, *be, loss, one, 2), Error);
}

}  // namespace
}  // namespace bertrt
