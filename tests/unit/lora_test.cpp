// LoRA adapters (model/lora.h, BertModel::attach_lora, io/adapter_io.h): the op against a scalar
// double reference on reference and cpu over odd sizes, strides and dropout; its backward by
// finite differences; the same bits at any thread count; PEFT's target matching and the errors of
// bad configs; in the model: an attached adapter changes nothing, the base gets no gradient and no
// moments, the whole-model gradient by finite differences, merge, and the adapter file.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference_backend.h"
#include "core/error.h"
#include "io/adapter_io.h"
#include "io/model_io.h"
#include "model/lora.h"
#include "model_runs.h"
#include "op_test_util.h"
#include "train/trainer.h"

namespace bertrt {
namespace {

using test::all_close;
using test::randn;

struct Shape {
  int rows, in_f, out_f, r, lda_extra;  // lda = in_f + lda_extra (a strided input, as the pooler's)
  float dropout;
};

const Shape kShapes[] = {{1, 5, 3, 1, 0, 0.0f},   {7, 17, 11, 2, 0, 0.0f},
                         {13, 32, 37, 5, 3, 0.0f}, {3, 64, 64, 8, 64, 0.0f},
                         {7, 17, 11, 2, 0, 0.3f},  {5, 23, 19, 3, 7, 0.5f}};

// Everything one forward + backward of the op gives.
struct OpRun {
  std::vector<float> out, u, dinp, dA, dB;
};

struct OpInputs {
  Shape s;
  std::vector<float> inp, A, B, out0, dout, dinp0, dA0, dB0;
  float scaling = 2.0f;  // alpha 2r
  uint64_t seed = 99;
  int lda() const { return s.in_f + s.lda_extra; }
  explicit OpInputs(const Shape& sh) : s(sh) {
    inp = randn(size_t(s.rows) * lda(), 1);
    A = randn(size_t(s.r) * s.in_f, 2, 0.3f);
    B = randn(size_t(s.out_f) * s.r, 3, 0.3f);
    out0 = randn(size_t(s.rows) * s.out_f, 4);  // the frozen Linear's output, added to
    dout = randn(size_t(s.rows) * s.out_f, 5);
    dinp0 = randn(size_t(s.rows) * lda(), 6);  // the frozen Linear's dX, accumulated into
    dA0 = randn(A.size(), 7), dB0 = randn(B.size(), 8);
  }
};

OpRun run_op(Backend& be, const OpInputs& x) {
  const Shape& s = x.s;
  OpRun o{x.out0, std::vector<float>(size_t(s.rows) * s.r), x.dinp0, x.dA0, x.dB0};
  std::vector<float> xd(size_t(s.rows) * s.in_f), du(size_t(s.rows) * s.r);
  lora_forward(be, o.out.data(), o.u.data(), xd.data(), x.inp.data(), x.A.data(), x.B.data(),
               s.rows, s.in_f, s.out_f, s.r, x.scaling, x.lda(), s.dropout, x.seed);
  lora_backward(be, o.dinp.data(), o.dA.data(), o.dB.data(), du.data(), xd.data(), x.dout.data(),
                x.inp.data(), o.u.data(), x.A.data(), x.B.data(), s.rows, s.in_f, s.out_f, s.r,
                x.scaling, x.lda(), x.lda(), s.dropout, x.seed);
  be.sync();
  return o;
}

// The op in double from its definition; the dropout mask is Backend::dropout's (the reference
// backend's, the oracle of every backend's dropout) applied to ones.
OpRun scalar_op(const OpInputs& x) {
  const Shape& s = x.s;
  const int R = s.rows, I = s.in_f, O = s.out_f, r = s.r, ld = x.lda();
  std::vector<float> mask(size_t(R) * I, 1.0f);
  if (s.dropout > 0) ReferenceBackend().dropout(mask.data(), mask.size(), s.dropout, x.seed);
  std::vector<double> xd(size_t(R) * I), u(size_t(R) * r), du(size_t(R) * r);
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < I; ++c) xd[size_t(i) * I + c] = double(x.inp[size_t(i) * ld + c]) * mask[size_t(i) * I + c];
  OpRun o{x.out0, std::vector<float>(size_t(R) * r), x.dinp0, x.dA0, x.dB0};
  for (int i = 0; i < R; ++i)
    for (int k = 0; k < r; ++k) {
      double acc = 0;
      for (int c = 0; c < I; ++c) acc += xd[size_t(i) * I + c] * x.A[size_t(k) * I + c];
      u[size_t(i) * r + k] = acc;
      o.u[size_t(i) * r + k] = float(acc);
    }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < O; ++j) {
      double acc = 0;
      for (int k = 0; k < r; ++k) acc += u[size_t(i) * r + k] * x.B[size_t(j) * r + k];
      o.out[size_t(i) * O + j] = float(x.out0[size_t(i) * O + j] + x.scaling * acc);
    }
  for (int i = 0; i < R; ++i)
    for (int k = 0; k < r; ++k) {
      double acc = 0;
      for (int j = 0; j < O; ++j) acc += double(x.dout[size_t(i) * O + j]) * x.B[size_t(j) * r + k];
      du[size_t(i) * r + k] = x.scaling * acc;
    }
  for (int j = 0; j < O; ++j)
    for (int k = 0; k < r; ++k) {
      double acc = 0;
      for (int i = 0; i < R; ++i) acc += double(x.dout[size_t(i) * O + j]) * u[size_t(i) * r + k];
      o.dB[size_t(j) * r + k] = float(x.dB0[size_t(j) * r + k] + x.scaling * acc);
    }
  for (int k = 0; k < r; ++k)
    for (int c = 0; c < I; ++c) {
      double acc = 0;
      for (int i = 0; i < R; ++i) acc += du[size_t(i) * r + k] * xd[size_t(i) * I + c];
      o.dA[size_t(k) * I + c] = float(x.dA0[size_t(k) * I + c] + acc);
    }
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < I; ++c) {
      double acc = 0;
      for (int k = 0; k < r; ++k) acc += du[size_t(i) * r + k] * x.A[size_t(k) * I + c];
      o.dinp[size_t(i) * ld + c] =
          float(x.dinp0[size_t(i) * ld + c] + acc * mask[size_t(i) * I + c]);
    }
  return o;
}

// Relative bound per element: each result is one or two chained fp32 sums of at most 64 products
// of O(1) values; fp32 accumulation errs by ≤ K·2⁻²⁴ relative to the sum of |terms| (64 × 6e-8 ≈
// 4e-6 per sum, twice chained 8e-6), and |terms| sums stay within a few times |result| + 1 for
// these Gaussian inputs: 5e-5 · (1 + |want|) covers it with margin.
std::vector<double> tol_for(const std::vector<float>& want) {
  std::vector<double> t(want.size());
  for (size_t i = 0; i < want.size(); ++i) t[i] = 5e-5 * (1.0 + std::fabs(want[i]));
  return t;
}

TEST(LoraOp, MatchesScalarReferenceOnEveryHostBackend) {
  for (const std::string& name : test::host_backend_names()) {
    auto be = make_backend(name);
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(name + " rows " + std::to_string(s.rows) + " in " + std::to_string(s.in_f) +
                   " out " + std::to_string(s.out_f) + " r " + std::to_string(s.r) + " dropout " +
                   std::to_string(s.dropout));
      const OpInputs x(s);
      const OpRun want = scalar_op(x), got = run_op(*be, x);
      EXPECT_TRUE(all_close(want.out, got.out, tol_for(want.out)));
      EXPECT_TRUE(all_close(want.u, got.u, tol_for(want.u)));
      EXPECT_TRUE(all_close(want.dinp, got.dinp, tol_for(want.dinp)));
      EXPECT_TRUE(all_close(want.dA, got.dA, tol_for(want.dA)));
      EXPECT_TRUE(all_close(want.dB, got.dB, tol_for(want.dB)));
    }
  }
}

// L = Σ dout ⊙ out is linear in each of A, B and inp (the mask fixed by the seed), so central
// differences are exact up to the rounding of L: with |L| ≲ 50 and fp32 sums (≈ 1e-5 absolute)
// over 2ε = 0.02, the numeric derivative errs by ≈ 1e-3; 2e-3 · (1 + |g|) bounds it.
TEST(LoraOp, BackwardMatchesFiniteDifferences) {
  ReferenceBackend be;
  for (const Shape& s : kShapes) {
    if (s.rows * s.in_f > 400) continue;  // a few hundred forwards each
    SCOPED_TRACE("rows " + std::to_string(s.rows) + " in " + std::to_string(s.in_f) +
                 " dropout " + std::to_string(s.dropout));
    OpInputs x(s);
    x.out0.assign(x.out0.size(), 0.0f);
    x.dinp0.assign(x.dinp0.size(), 0.0f);
    x.dA0.assign(x.dA0.size(), 0.0f), x.dB0.assign(x.dB0.size(), 0.0f);
    const OpRun g = run_op(be, x);
    auto loss = [&]() {
      std::vector<float> out(size_t(s.rows) * s.out_f, 0.0f), u(size_t(s.rows) * s.r),
          xd(size_t(s.rows) * s.in_f);
      lora_forward(be, out.data(), u.data(), xd.data(), x.inp.data(), x.A.data(), x.B.data(),
                   s.rows, s.in_f, s.out_f, s.r, x.scaling, x.lda(), s.dropout, x.seed);
      double l = 0;
      for (size_t i = 0; i < out.size(); ++i) l += double(out[i]) * x.dout[i];
      return l;
    };
    const float eps = 1e-2f;
    auto check = [&](std::vector<float>& theta, const std::vector<float>& grad, const char* what,
                     int ld, int cols) {
      for (size_t i = 0; i < theta.size(); ++i) {
        if (ld && int(i % size_t(ld)) >= cols) continue;  // the stride's gap: not an input
        const float keep = theta[i];
        theta[i] = keep + eps;
        const double up = loss();
        theta[i] = keep - eps;
        const double down = loss();
        theta[i] = keep;
        const double numeric = (up - down) / (2.0 * eps);
        ASSERT_NEAR(numeric, grad[i], 2e-3 * (1.0 + std::fabs(grad[i]))) << what << "[" << i << "]";
      }
    };
    check(x.A, g.dA, "dA", 0, 0);
    check(x.B, g.dB, "dB", 0, 0);
    check(x.inp, g.dinp, "dinp", x.lda(), s.in_f);
  }
}

TEST(LoraOp, SameBitsAtAnyThreadCount) {
  // The op's shapes, and one the size of a BERT-mini Linear at B8 S128 that the pool splits.
  std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
  shapes.push_back({1024, 256, 1024, 8, 0, 0.1f});
  for (const Shape& s : shapes) {
    const OpInputs x(s);
    CpuBackend one(1);
    const OpRun want = run_op(one, x);
    for (int threads : {2, 3}) {
      CpuBackend be(threads);
      const OpRun got = run_op(be, x);
      EXPECT_EQ(want.out, got.out) << threads << " threads";
      EXPECT_EQ(want.dinp, got.dinp) << threads << " threads";
      EXPECT_EQ(want.dA, got.dA) << threads << " threads";
      EXPECT_EQ(want.dB, got.dB) << threads << " threads";
    }
  }
}

TEST(LoraOp, MergeAddsScaledProduct) {
  const int O = 5, I = 7, r = 3;
  const std::vector<float> A = randn(size_t(r) * I, 1), B = randn(size_t(O) * r, 2),
                           W0 = randn(size_t(O) * I, 3);
  std::vector<float> W = W0;
  lora_merge(W.data(), A.data(), B.data(), O, I, r, 0.5f);
  for (int o = 0; o < O; ++o)
    for (int i = 0; i < I; ++i) {
      double d = 0;
      for (int k = 0; k < r; ++k) d += double(B[size_t(o) * r + k]) * A[size_t(k) * I + i];
      EXPECT_FLOAT_EQ(W[size_t(o) * I + i], float(W0[size_t(o) * I + i] + 0.5 * d));
    }
}

// --- target matching (PEFT check_target_module_exists) -------------------------------------------

std::vector<std::string> site_names(const std::vector<std::string>& targets, int r = 4) {
  LoraConfig c;
  c.r = r;
  c.target_modules = targets;
  std::vector<std::string> out;
  for (const LoraSite& s : lora_sites(test::tiny_config(), c, "--lora-target")) out.push_back(s.name);
  return out;
}

std::string error_of(const std::vector<std::string>& targets, int r = 4, float alpha = 8,
                     float dropout = 0) {
  LoraConfig c;
  c.r = r, c.alpha = alpha, c.dropout = dropout;
  c.target_modules = targets;
  try {
    lora_sites(test::tiny_config(), c, "--lora-target");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LoraTargets, MatchAsPeft) {
  EXPECT_TRUE(lora_target_matches("bert.encoder.layer.0.attention.self.query", "query"));
  EXPECT_TRUE(lora_target_matches("bert.pooler.dense", "dense"));
  EXPECT_TRUE(lora_target_matches("bert.encoder.layer.0.attention.output.dense", "output.dense"));
  EXPECT_FALSE(lora_target_matches("bert.encoder.layer.0.attention.self.query", "uery"));
  EXPECT_TRUE(lora_target_matches("bert.pooler.dense", "bert.pooler.dense"));
  // tiny_config: 2 layers.
  EXPECT_EQ(site_names({"query", "value"}),
            (std::vector<std::string>{"bert.encoder.layer.0.attention.self.query",
                                      "bert.encoder.layer.0.attention.self.value",
                                      "bert.encoder.layer.1.attention.self.query",
                                      "bert.encoder.layer.1.attention.self.value"}));
  // `dense` also hits the pooler's, as in PEFT; `output.dense` both output denses of a layer.
  const std::vector<std::string> dense = site_names({"dense"});
  EXPECT_EQ(dense.size(), 7u);
  EXPECT_EQ(dense.back(), "bert.pooler.dense");
  EXPECT_EQ(site_names({"output.dense"}).size(), 4u);
  EXPECT_EQ(site_names({"layer.1.intermediate.dense"}),
            (std::vector<std::string>{"bert.encoder.layer.1.intermediate.dense"}));
}

TEST(LoraTargets, BadConfigsNameTheFlagAndWhatWasExpected) {
  EXPECT_NE(error_of({"foo"}).find("--lora-target: target 'foo' matches no module"), std::string::npos)
      << error_of({"foo"});
  EXPECT_NE(error_of({"intermediate"}).find("bert.encoder.layer.0.intermediate"), std::string::npos);
  EXPECT_NE(error_of({"intermediate"}).find("not a Linear"), std::string::npos);
  EXPECT_NE(error_of({"classifier"}).find("modules_to_save"), std::string::npos);
  EXPECT_NE(error_of({"query"}, 0).find("r = 0: expected ≥ 1"), std::string::npos);
  // tiny_config: hidden 32, intermediate 37.
  EXPECT_NE(error_of({"query"}, 33).find("exceeds bert.encoder.layer.0.attention.self.query's width"),
            std::string::npos)
      << error_of({"query"}, 33);
  EXPECT_EQ(error_of({"intermediate.dense"}, 32), "");
  EXPECT_NE(error_of({"query"}, 4, 0).find("lora_alpha"), std::string::npos);
  EXPECT_NE(error_of({"query"}, 4, 8, 1.0f).find("lora_dropout"), std::string::npos);
  EXPECT_NE(error_of({}).find("no LoRA target modules"), std::string::npos);
}

// --- in the model ----------------------------------------------------------------------------

LoraConfig all_linears(float dropout = 0.0f) {
  LoraConfig c;
  c.r = 3, c.alpha = 6, c.dropout = dropout;
  c.target_modules = {"query", "key", "value", "dense"};
  return c;
}

std::unique_ptr<Tokenizer> tokenizer_for(const BertConfig& c) {
  TokenizerSpec s;
  s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  while (int(s.vocab.size()) < c.vocab_size) s.vocab.push_back("w" + std::to_string(s.vocab.size()));
  return make_tokenizer(s);
}

// Gives every adapter's B random values (an attached adapter starts at B = 0: no effect).
void randomize_b(BertModel& m, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.2f);
  for (const ParamInfo& p : m.layout().params())
    if (p.name.find(".lora_B.") != std::string::npos)
      for (size_t i = 0; i < p.numel; ++i) m.params()[p.offset + i] = nd(rng);
}

TEST(LoraModel, AttachedAdapterChangesNothingUntilTrained) {
  const BertConfig c = test::tiny_config();
  const test::Batch b = test::make_batch(c, 1);
  BertModel base(c, test::heads_of("sequence"));
  base.init_weights(3);
  BertModel m(c, test::heads_of("sequence"));
  m.init_weights(3);
  m.attach_lora(all_linears(), 5);
  ReferenceBackend be;
  // A training forward runs the same ops plus adapters that add exact zeros: the same bits.
  EXPECT_EQ(base.forward(be, b.inputs(), b.targets(), true).loss,
            m.forward(be, b.inputs(), b.targets(), true).loss);
  // Inference: the base runs its Linears fused, the adapted model unfused (other roundings).
  base.forward(be, b.inputs(), b.targets(), false);
  m.forward(be, b.inputs(), b.targets(), false);
  EXPECT_TRUE(all_close(base.logits(), m.logits(), {1e-5}));
  // lora_A drawn as PEFT's kaiming_uniform_(a=√5): within ±1/√in_features, not all zero.
  const ParamInfo& a = m.layout().at("bert.encoder.layer.0.intermediate.dense.lora_A.weight");
  float amax = 0;
  for (size_t i = 0; i < a.numel; ++i) amax = std::max(amax, std::fabs(m.params()[a.offset + i]));
  EXPECT_GT(amax, 0.5f / std::sqrt(32.0f));
  EXPECT_LE(amax, 1.0f / std::sqrt(32.0f));
}

// The base gets no gradient at all (its gradient buffer is never written), the adapters and the
// head get the gradient of the loss: directional derivatives against central differences, as
// dropout_model_test does (ε = 1e-3, 1 % plus an absolute floor of 5e-7 for the rounding of the
// loss), with LoRA dropout on, so the masks of forward and backward must agree too.
TEST(LoraModel, GradientsOnlyForAdaptersAndHeadAndCorrect) {
  const BertConfig c = test::tiny_config();
  for (const float dropout : {0.0f, 0.4f}) {
    SCOPED_TRACE("lora_dropout " + std::to_string(dropout));
    BertModel m(c, test::heads_of("sequence"));
    m.init_weights(3);
    m.attach_lora(all_linears(dropout), 5);
    randomize_b(m, 9);
    m.set_backward_plan({0, false, false});
    m.set_dropout({0.0f, 21, 4, 0.0f});
    ReferenceBackend be;
    const test::Batch b = test::make_batch(c, 1);
    m.zero_grad(be);
    m.forward(be, b.inputs(), b.targets(), true);
    m.backward(be);
    const size_t n = m.layout().total();
    const std::vector<float> g(m.grads(), m.grads() + n), theta(m.params(), m.params() + n);
    std::mt19937 rng(5);
    std::normal_distribution<float> nd;
    int adapters = 0;
    for (const ParamInfo& p : m.layout().params()) {
      SCOPED_TRACE(p.name);
      if (m.is_base_param(p.name)) {
        for (size_t i = 0; i < p.numel; ++i) ASSERT_EQ(g[p.offset + i], 0.0f);
        continue;
      }
      adapters += p.name.find(".lora_") != std::string::npos;
      std::vector<float> u(p.numel);
      for (float& x : u) x = nd(rng);
      double analytic = 0;
      for (size_t i = 0; i < p.numel; ++i) analytic += double(g[p.offset + i]) * u[i];
      const float eps = 1e-3f;
      auto shifted = [&](float sgn) {
        for (size_t i = 0; i < p.numel; ++i)
          m.params()[p.offset + i] = theta[p.offset + i] + sgn * eps * u[i];
        return m.forward(be, b.inputs(), b.targets(), true).loss;
      };
      const double numeric = (shifted(1) - shifted(-1)) / (2.0 * eps);
      std::copy(theta.begin() + p.offset, theta.begin() + p.offset + p.numel,
                m.params() + p.offset);
      EXPECT_NEAR(numeric, analytic, 0.01 * std::fabs(analytic) + 5e-7);
    }
    EXPECT_EQ(adapters, 2 * 13);  // 6 Linears × 2 layers + the pooler, A and B each
  }
}

TEST(LoraModel, TrainerUpdatesOnlyAdaptersAndHead) {
  const BertConfig c = test::tiny_config();
  BertModel m(c, test::heads_of("sequence"));
  m.init_weights(3);
  m.attach_lora(all_linears(0.1f), 5);
  const std::vector<float> before(m.params(), m.params() + m.layout().total());
  ReferenceBackend be;
  OptimOptions oo;
  oo.learning_rate = 1e-2f, oo.total_steps = 3;
  Trainer t(m, be, oo);
  const test::Batch b = test::make_batch(c, 1);
  for (int s = 0; s < 3; ++s) t.step(b.inputs(), b.targets());
  m.params();  // on the host
  size_t moved = 0;
  for (const ParamInfo& p : m.layout().params()) {
    bool changed = false;
    for (size_t i = 0; i < p.numel; ++i) changed |= m.params()[p.offset + i] != before[p.offset + i];
    if (m.is_base_param(p.name))
      EXPECT_FALSE(changed) << p.name;
    else
      moved += changed;
  }
  EXPECT_EQ(moved, 2 * 13 + 2u);  // every adapter tensor and classifier.weight/.bias
  // Moments exist for exactly those tensors.
  for (const ParamInfo& p : t.optimizer().moment_layout().params())
    EXPECT_FALSE(m.is_base_param(p.name)) << p.name;
  EXPECT_EQ(t.optimizer().moment_layout().params().size(), 2 * 13 + 2u);
}

TEST(LoraModel, MergedModelGivesTheAdaptedOutputs) {
  const BertConfig c = test::tiny_config();
  BertModel m(c, test::heads_of("sequence"));
  m.init_weights(3);
  m.attach_lora(all_linears(), 5);
  randomize_b(m, 9);
  ReferenceBackend be;
  const test::Batch b = test::make_batch(c, 1);
  m.forward(be, b.inputs(), b.targets(), false);
  const std::vector<float> adapted = m.logits();
  m.merge_lora();
  EXPECT_EQ(m.lora(), nullptr);
  EXPECT_EQ(m.layout().find("bert.pooler.dense.lora_A.weight"), nullptr);
  m.forward(be, b.inputs(), b.targets(), false);
  // W + s·B·A in one weight against two products: fp32 rounding of O(1) logits through 2 layers.
  EXPECT_TRUE(all_close(adapted, m.logits(), {2e-5}));
}

TEST(LoraModel, AdapterFileRoundTripAndRefusals) {
  test::TempDir dir;
  const BertConfig c = test::tiny_config();
  const auto tok = tokenizer_for(c);
  BertModel base(c, HeadsConfig{});
  base.init_weights(3);
  save_model(dir.file("base.brt"), base, *tok, {});
  LoadedModel loaded = load_model(dir.file("base.brt"));
  BertModel& m = *loaded.model;
  const uint32_t sum = adapter_base_checksum(m);
  m.set_heads(test::heads_of("sequence"), 1);
  EXPECT_EQ(adapter_base_checksum(m), sum);  // the head is not part of the base
  m.attach_lora(all_linears(0.1f), 5);
  randomize_b(m, 9);
  save_adapter(dir.file("a.brt"), m, *tok, sum, {{"task", "{\"name\":\"x\"}"}}, "base.brt");
  ReferenceBackend be;
  const test::Batch b = test::make_batch(c, 1);
  m.forward(be, b.inputs(), b.targets(), false);
  const std::vector<float> want = m.logits();

  LoadedModel again = load_model(dir.file("base.brt"));
  apply_adapter(again, dir.file("base.brt"), dir.file("a.brt"));
  again.model->forward(be, b.inputs(), b.targets(), false);
  EXPECT_EQ(again.model->logits(), want);
  EXPECT_EQ(again.metadata.at("task"), "{\"name\":\"x\"}");
  ASSERT_NE(again.model->adapter(), nullptr);  // run in place, over the base's mapping
  EXPECT_EQ(again.model->lora(), nullptr);
  EXPECT_EQ(again.model->adapter()->lora(), all_linears(0.1f));

  auto error_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // Another base (other weights, same shapes): refused by its checksum.
  BertModel other(c, HeadsConfig{});
  other.init_weights(4);
  save_model(dir.file("other.brt"), other, *tok, {});
  LoadedModel o = load_model(dir.file("other.brt"));
  const std::string e1 = error_of([&] { apply_adapter(o, dir.file("other.brt"), dir.file("a.brt")); });
  EXPECT_NE(e1.find("was trained on another base"), std::string::npos) << e1;
  EXPECT_NE(e1.find(checksum_text(sum)), std::string::npos) << e1;
  // Another shape of base.
  BertConfig wide = c;
  wide.hidden_size = 36, wide.num_attention_heads = 4;
  BertModel w(wide, HeadsConfig{});
  w.init_weights(3);
  save_model(dir.file("wide.brt"), w, *tok, {});
  LoadedModel wl = load_model(dir.file("wide.brt"));
  const std::string e2 = error_of([&] { apply_adapter(wl, dir.file("wide.brt"), dir.file("a.brt")); });
  EXPECT_NE(e2.find("hidden_size 32"), std::string::npos) << e2;
  // An adapter is not a model, a model is not an adapter.
  const std::string e3 = error_of([&] { load_model(dir.file("a.brt")); });
  EXPECT_NE(e3.find("a LoRA adapter, not a model"), std::string::npos) << e3;
  LoadedModel b2 = load_model(dir.file("base.brt"));
  const std::string e4 =
      error_of([&] { apply_adapter(b2, dir.file("base.brt"), dir.file("other.brt")); });
  EXPECT_NE(e4.find("a model file, not a LoRA adapter"), std::string::npos) << e4;
}

}  // namespace
}  // namespace bertrt
