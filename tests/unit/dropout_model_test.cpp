// Hidden dropout in the whole model (encoder.h Dropout, Trainer::set_dropout): the backward applies
// the forward's masks at all four sites (the head's input included), the masks do not depend on the
// thread count, and the inference forward never drops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/dropout_rule.h"
#include "backends/reference/reference_backend.h"
#include "model_runs.h"

namespace bertrt {
namespace {

using test::make_batch;
using test::tiny_config;

// Loss and gradient of one training forward + backward with the given dropout draw.
double loss_of(BertModel& m, Backend& be, const test::Batch& b) {
  return m.forward(be, b.inputs(), b.targets(), /*training=*/true).loss;
}

// Directional derivatives g·u from backward() against central differences
// (L(θ + εu) − L(θ − εu)) / 2ε with the same masks, u a unit-variance direction over one tensor
// right below each dropout site (the embeddings' LayerNorm, each layer's attention-output and
// output dense, the pooler or the last LayerNorm under the head's input, the head's weight over
// it): a mask missing from the backward of that site gets its gradient wrong by the dropped share
// and more. ε = 1e-3: O(ε²) truncation plus the loss's rounding over 2ε; measured, the two agree
// to 0.3 % (the LayerNorm weight) and 1e-4 (the dense weights), so 1 % bounds them, while the
// gradients without the masks are off by 60 % or more. The rounding leaves an absolute floor:
// gaps of 1.1e-7 and 2.7e-7 on directional derivatives of 4e-6 and 1.5e-5 (query weights, where
// the attention is flat), so kFloor = 5e-7 is added. Dropping at p = 0.5.
constexpr double kFloor = 5e-7;
void expect_gradients_match(const std::string& head, const std::vector<std::string>& below,
                            const Dropout drop = {0.5f, 17, 2}, float qk_scale = 1.0f) {
  const BertConfig c = tiny_config();
  BertModel m(c, test::heads_of(head));
  m.init_weights(3);
  for (const ParamInfo& p : m.layout().params())  // sharper attention: see the caller
    if (p.name.find("self.query.weight") != std::string::npos ||
        p.name.find("self.key.weight") != std::string::npos)
      for (size_t i = 0; i < p.numel; ++i) m.params()[p.offset + i] *= qk_scale;
  ReferenceBackend be;
  const test::Batch b = make_batch(c, 1);
  const size_t n = m.layout().total();
  m.set_dropout(drop);
  m.zero_grad(be);
  loss_of(m, be, b);
  m.backward(be);
  const std::vector<float> g(m.grads(), m.grads() + n), theta(m.params(), m.params() + n);
  m.set_dropout({});
  m.zero_grad(be);
  loss_of(m, be, b);
  m.backward(be);
  const std::vector<float> g_plain(m.grads(), m.grads() + n);
  m.set_dropout(drop);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  const float eps = 1e-3f;
  int checked = 0;
  for (const ParamInfo& p : m.layout().params()) {
    if (std::find(below.begin(), below.end(), p.name) == below.end()) continue;
    SCOPED_TRACE(head + ": " + p.name);
    ++checked;
    std::vector<float> u(p.numel);
    for (float& x : u) x = nd(rng);
    double analytic = 0, plain = 0;
    for (size_t i = 0; i < p.numel; ++i)
      analytic += double(g[p.offset + i]) * u[i], plain += double(g_plain[p.offset + i]) * u[i];
    auto shifted_loss = [&](float s) {
      for (size_t i = 0; i < p.numel; ++i)
        m.params()[p.offset + i] = theta[p.offset + i] + s * eps * u[i];
      return loss_of(m, be, b);
    };
    const double numeric = (shifted_loss(1) - shifted_loss(-1)) / (2.0 * eps);
    for (size_t i = 0; i < p.numel; ++i) m.params()[p.offset + i] = theta[p.offset + i];
    std::printf("%s %s: g·u %.7g, central difference %.7g, without dropout %.7g\n", head.c_str(),
                p.name.c_str(), analytic, numeric, plain);
    EXPECT_NEAR(analytic, numeric, 1e-2 * std::fabs(numeric) + kFloor);
    // The masks matter here: the gradient without them is another one.
    EXPECT_GT(std::fabs(plain - numeric), 0.1 * std::fabs(numeric));
  }
  EXPECT_EQ(checked, int(below.size())) << "a tensor name is not in the layout";
}

TEST(DropoutModel, GradientMatchesFiniteDifferencesWithTheSameMasks) {
  expect_gradients_match("sequence", {"bert.embeddings.LayerNorm.weight",
                                      "bert.encoder.layer.0.attention.output.dense.weight",
                                      "bert.encoder.layer.0.output.dense.weight",
                                      "bert.encoder.layer.1.attention.output.dense.weight",
                                      "bert.encoder.layer.1.output.dense.weight",
                                      "bert.pooler.dense.weight", "classifier.weight"});
}

// The token classification head drops every token's last hidden state (HF
// BertForTokenClassification), the regression head the pooled output.
TEST(DropoutModel, HeadInputDropoutGradientsForTokenAndRegressionHeads) {
  expect_gradients_match("token",
                         {"bert.encoder.layer.1.output.LayerNorm.weight", "classifier.weight"});
  expect_gradients_match("regression", {"bert.pooler.dense.weight", "classifier.weight"});
}

// Attention-probability dropout alone (HF attention_probs_dropout_prob): the value weights see
// the dropped probabilities through dV, the query and key weights through the softmax backward.
// At the std-0.02 init the scores are ~1e-3, the softmax is flat and the query/key gradients
// (~4e-6) sit at the central difference's rounding floor (a few % off, with or without dropout);
// weights ×10 make the scores ~0.1 and the gradients large enough to compare at 1 %.
TEST(DropoutModel, AttentionProbsDropoutGradientsMatchFiniteDifferences) {
  std::vector<std::string> below;
  for (const char* l : {"0", "1"})
    for (const char* w : {"query", "key", "value"})
      below.push_back(std::string("bert.encoder.layer.") + l + ".attention.self." + w + ".weight");
  expect_gradients_match("sequence", below, Dropout{0.0f, 17, 2, 0.5f}, 10.0f);
}

// The backward plans redraw the forward's masks: recomputing a layer (or freezing the one
// below) gives the gradients of the plain plan, bit for bit, with both dropouts on; and a frozen
// layer drops too (HF's modules drop whenever the model is in training mode).
TEST(DropoutModel, RecomputeAndFrozenLayersDrawTheSameMasks) {
  const BertConfig c = tiny_config();
  const test::Batch b = make_batch(c, 1);
  auto grads_with = [&](const BackwardPlan& plan, const Dropout& drop) {
    BertModel m(c, test::heads_of("pretraining"));
    m.init_weights(7);
    CpuBackend be(2);
    m.set_backward_plan(plan);
    m.set_dropout(drop);
    m.zero_grad(be);
    const double loss = m.forward(be, b.inputs(), b.targets(), true).loss;
    m.backward(be);
    std::vector<float> g(m.grads(), m.grads() + m.layout().total());
    g.push_back(float(loss));
    return g;
  };
  const Dropout drop{0.2f, 3, 5, 0.3f};
  BackwardPlan redo, frozen{1, false, false}, frozen_redo{1, false, true};
  redo.recompute = true;
  EXPECT_EQ(grads_with({}, drop), grads_with(redo, drop));
  const std::vector<float> f = grads_with(frozen, drop);
  EXPECT_EQ(f, grads_with(frozen_redo, drop));
  EXPECT_NE(f.back(), grads_with(frozen, Dropout{0.2f, 3, 5, 0.0f}).back());
}

// The sequence head reads the pooled output through its own mask (HF: classifier_dropout unset
// means hidden_dropout_prob): a training forward's logits are the classifier applied on the host
// to pooler_output() dropped by the rule of backends/dropout_rule.h at the head's site.
TEST(DropoutModel, TheSequenceHeadDropsThePooledOutput) {
  const BertConfig c = tiny_config();
  BertModel m(c, test::heads_of("sequence"));
  m.init_weights(3);
  ReferenceBackend be;
  const test::Batch b = make_batch(c, 1);
  const Dropout drop{0.5f, 17, 2};
  m.set_dropout(drop);
  const ForwardResult r = m.forward(be, b.inputs(), b.targets(), /*training=*/true);
  const int C = c.hidden_size, K = m.heads().num_labels();
  const float* pooled = m.pooler_output();
  const float *w = nullptr, *bias = nullptr;
  for (const ParamInfo& p : m.layout().params()) {
    if (p.name == "classifier.weight") w = m.params() + p.offset;
    if (p.name == "classifier.bias") bias = m.params() + p.offset;
  }
  ASSERT_TRUE(w && bias);
  const uint64_t seed = dropout_seed(drop.seed, drop.step, Dropout::head_site());
  int dropped = 0;
  for (int i = 0; i < b.B; ++i)
    for (int k = 0; k < K; ++k) {
      double logit = bias[k];
      for (int j = 0; j < C; ++j) {
        const uint32_t idx = uint32_t(i * C + j);
        const bool keep = dropout_bits(seed, idx) >= dropout_threshold(drop.prob);
        dropped += !keep && k == 0;
        logit += keep ? double(pooled[idx] * dropout_scale(drop.prob)) * w[k * C + j] : 0.0;
      }
      // fp32 GEMM against a double sum over 32 terms of size ≤ ~1: 1e-5 is tens of ulps.
      EXPECT_NEAR(r.logits[i * K + k], logit, 1e-5) << "row " << i << " label " << k;
    }
  EXPECT_GT(dropped, 0);
}

// Three dropout steps (two with two micro-batches) on the cpu backend with 1 and 3 threads give
// the same bits; and they differ from the same steps without dropout.
std::vector<float> train(Backend& be, float p) {
  const BertConfig c = tiny_config();
  BertModel m(c, test::heads_of("pretraining"));
  m.init_weights(11);
  OptimOptions o;
  o.learning_rate = 3e-3f, o.total_steps = 3, o.warmup_steps = 1;
  Trainer trainer(m, be, o);
  trainer.set_dropout(p, 9, p);
  const test::Batch b1 = make_batch(c, 1), b2 = make_batch(c, 2);
  std::vector<float> out;
  for (int step = 0; step < 3; ++step) {
    std::vector<MicroBatch> micro{{b1.inputs(), b1.targets()}};
    if (step > 0) micro.push_back({b2.inputs(), b2.targets()});
    out.push_back(float(trainer.step(micro).fwd.loss));
  }
  out.insert(out.end(), m.params(), m.params() + m.layout().total());
  return out;
}

TEST(DropoutModel, TrainingIsBitIdenticalAcrossThreadCounts) {
  CpuBackend one(1), three(3);
  const std::vector<float> a = train(one, 0.1f), b = train(three, 0.1f);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, train(one, 0.0f));
}

// Dropout belongs to training forwards: an inference forward gives the same outputs whatever the
// model's dropout setting, and a training forward with it gives another loss.
TEST(DropoutModel, InferenceNeverDrops) {
  const BertConfig c = tiny_config();
  BertModel m(c, test::heads_of("sequence"));
  m.init_weights(3);
  CpuBackend be(2);
  const test::Batch b = make_batch(c, 1);
  const double eval_plain = m.forward(be, b.inputs(), b.targets(), false).loss;
  const double train_plain = m.forward(be, b.inputs(), b.targets(), true).loss;
  m.set_dropout({0.3f, 1, 0, 0.3f});
  EXPECT_EQ(m.forward(be, b.inputs(), b.targets(), false).loss, eval_plain);
  EXPECT_NE(m.forward(be, b.inputs(), b.targets(), true).loss, train_plain);
}

TEST(DropoutModel, TrainerRejectsAProbabilityOutsideZeroToOne) {
  const BertConfig c = tiny_config();
  BertModel m(c, test::heads_of("sequence"));
  CpuBackend be(1);
  Trainer trainer(m, be, OptimOptions{});
  EXPECT_THROW(trainer.set_dropout(1.0f, 1), Error);
  EXPECT_THROW(trainer.set_dropout(-0.5f, 1), Error);
  EXPECT_THROW(trainer.set_dropout(0.1f, 1, 1.0f), Error);
}

}  // namespace
}  // namespace bertrt
