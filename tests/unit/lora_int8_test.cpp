// LoRA over an int8 base (model/lora_int8.h): the int8 Linear's input gradient against the
// dequantized fp32 Linear (a double reference and finite differences); in the model: the forward
// equals the int8 model's forward plus the fp32 adapter update, the gradients reach every adapter
// and none of the base, a short training run learns; the base checksum of an int8 model and the
// refusal of adapters trained on the other kind of base.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference_backend.h"
#include "core/error.h"
#include "io/adapter_io.h"
#include "io/model_io.h"
#include "model/linear.h"
#include "model/lora_int8.h"
#include "model_runs.h"
#include "op_test_util.h"
#include "quant/quant_linear.h"
#include "train/trainer.h"

namespace bertrt {
namespace {

using test::all_close;
using test::randn;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A frozen int8 Linear [out, in] from Gaussian weights, its input range [-3, 3].
struct Int8Linear {
  QuantLinear q;
  Int8BackwardScratch scratch;
  std::vector<double> wdeq;  // scale[o] · q[o, i]
  Int8Linear(int out_f, int in_f, uint32_t seed) {
    const std::vector<float> w = randn(size_t(out_f) * in_f, seed, 0.2f);
    q.observer.restore(-3.0f, 3.0f, 1, /*frozen=*/true);
    q.make_int8(w.data(), out_f, in_f, "test");
    q.backward = &scratch;
    for (size_t i = 0; i < w.size(); ++i)
      wdeq.push_back(double(q.w8.q[i]) * q.w8.scale[i / size_t(in_f)]);
  }
};

struct DxShape {
  int rows, in_f, out_f, ldd_extra;
};
const DxShape kDxShapes[] = {{1, 5, 3, 0}, {7, 17, 11, 0}, {13, 64, 37, 5}, {4, 32, 96, 32}};

// dinp += dout · dequant(W) on reference and cpu, against the double product: each element is one
// fp32 sum of out_f ≤ 96 products of O(1) values (error ≤ 96 · 2⁻²⁴ of the sum of |terms|, which
// stays within a few times 1 + |result| here): 2e-5 · (1 + |want|) with margin.
TEST(LoraInt8, InputGradientIsThatOfTheDequantizedLinear) {
  ReferenceBackend ref;
  CpuBackend cpu;
  for (const DxShape& s : kDxShapes) {
    SCOPED_TRACE(testing::Message() << s.rows << "x" << s.in_f << "->" << s.out_f);
    Int8Linear L(s.out_f, s.in_f, 7);
    const int ldd = s.in_f + s.ldd_extra;
    const std::vector<float> dout = randn(size_t(s.rows) * s.out_f, 2);
    const std::vector<float> dinp0 = randn(size_t(s.rows) * ldd, 3);
    std::vector<float> want = dinp0;
    std::vector<double> tol(want.size(), 0.0);
    for (int r = 0; r < s.rows; ++r)
      for (int i = 0; i < s.in_f; ++i) {
        double acc = 0;
        for (int o = 0; o < s.out_f; ++o)
          acc += double(dout[size_t(r) * s.out_f + o]) * L.wdeq[size_t(o) * s.in_f + i];
        want[size_t(r) * ldd + i] = float(dinp0[size_t(r) * ldd + i] + acc);
      }
    for (size_t i = 0; i < want.size(); ++i) tol[i] = 2e-5 * (1.0 + std::fabs(want[i]));
    for (Backend* be : {static_cast<Backend*>(&ref), static_cast<Backend*>(&cpu)}) {
      SCOPED_TRACE(be->name());
      std::vector<float> dinp = dinp0;
      linear_backward(*be, dinp.data(), nullptr, nullptr, dout.data(), nullptr, nullptr, s.rows,
                      s.in_f, s.out_f, 0, ldd, &L.q);
      be->sync();
      EXPECT_TRUE(all_close(want, dinp, tol));
    }
  }
}

// The same gradient by central differences of the dequantized fp32 Linear, loss Σ dout ⊙ y: the
// loss is linear in x, so the difference quotient is exact but for the rounding of the two losses
// (sums of ~rows·out_f O(1) terms, ~1e-6 relative): ε = 1e-2 and 1e-3 relative plus 1e-4.
TEST(LoraInt8, InputGradientMatchesFiniteDifferencesOfTheDequantizedLinear) {
  CpuBackend be;
  for (const DxShape& s : kDxShapes) {
    SCOPED_TRACE(testing::Message() << s.rows << "x" << s.in_f << "->" << s.out_f);
    Int8Linear L(s.out_f, s.in_f, 11);
    const std::vector<float> w(L.wdeq.begin(), L.wdeq.end());
    const std::vector<float> bias = randn(size_t(s.out_f), 4);
    const std::vector<float> x = randn(size_t(s.rows) * s.in_f, 5);
    const std::vector<float> dout = randn(size_t(s.rows) * s.out_f, 6);
    const std::vector<float> u = randn(x.size(), 8);
    std::vector<float> dx(x.size(), 0.0f);
    linear_backward(be, dx.data(), nullptr, nullptr, dout.data(), nullptr, nullptr, s.rows, s.in_f,
                    s.out_f, 0, 0, &L.q);
    auto loss = [&](float sgn, float eps) {
      std::vector<float> xs(x.size()), y(size_t(s.rows) * s.out_f);
      for (size_t i = 0; i < x.size(); ++i) xs[i] = x[i] + sgn * eps * u[i];
      linear_forward(be, y.data(), xs.data(), w.data(), bias.data(), s.rows, s.in_f, s.out_f);
      double l = 0;
      for (size_t i = 0; i < y.size(); ++i) l += double(dout[i]) * y[i];
      return l;
    };
    const float eps = 1e-2f;
    const double numeric = (loss(1, eps) - loss(-1, eps)) / (2.0 * eps);
    double analytic = 0;
    for (size_t i = 0; i < x.size(); ++i) analytic += double(dx[i]) * u[i];
    EXPECT_NEAR(numeric, analytic, 1e-3 * std::fabs(analytic) + 1e-4);
  }
}

TEST(LoraInt8, NoWeightGradientOfAnInt8Linear) {
  ReferenceBackend be;
  Int8Linear L(3, 5, 1);
  std::vector<float> dout(6, 1.0f), x(10, 1.0f), dx(10), dw(15), db(3);
  const std::string e = error_of([&] {
    linear_backward(be, dx.data(), dw.data(), db.data(), dout.data(), x.data(), nullptr, 2, 5, 3, 0,
                    0, &L.q);
  });
  EXPECT_NE(e.find("its weight and bias are frozen"), std::string::npos) << e;
}

// --- in the model --------------------------------------------------------------------------------

std::unique_ptr<Tokenizer> tokenizer_for(const BertConfig& c) {
  TokenizerSpec s;
  s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  while (int(s.vocab.size()) < c.vocab_size) s.vocab.push_back("w" + std::to_string(s.vocab.size()));
  return make_tokenizer(s);
}

LoraConfig lora_config(std::vector<std::string> targets = {"query", "key", "value", "dense"}) {
  LoraConfig c;
  c.r = 3, c.alpha = 6;
  c.target_modules = std::move(targets);
  return c;
}

void randomize_b(BertModel& m, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.2f);
  for (const ParamInfo& p : m.layout().params())
    if (p.name.find(".lora_B.") != std::string::npos)
      for (size_t i = 0; i < p.numel; ++i) m.params()[p.offset + i] = nd(rng);
}

// A float base (sequence head) and the int8 model PTQ makes of it, both written to `dir`
// (base.brt, base8.brt) as `bertrt quantize` would; returns the in-memory int8 model's checksum.
uint32_t write_bases(const test::TempDir& dir, const BertConfig& c, const Tokenizer& tok) {
  BertModel m(c, test::heads_of("sequence"));
  m.init_weights(3);
  save_model(dir.file("base.brt"), m, tok, {});
  ReferenceBackend be;
  m.begin_calibration(/*int8_embeddings=*/true);
  for (uint32_t seed : {1u, 2u, 3u})
    m.forward(be, test::make_batch(c, seed).inputs(), Targets{}, false);
  m.finish_calibration();
  m.convert_to_int8();
  save_model(dir.file("base8.brt"), m, tok, {});
  return adapter_base_checksum(m);
}

struct Int8LoraTest : ::testing::Test {
  test::TempDir dir;
  BertConfig c = test::tiny_config();
  std::unique_ptr<Tokenizer> tok = tokenizer_for(c);
  uint32_t sum8 = write_bases(dir, c, *tok);
  ReferenceBackend be;
  test::Batch b = test::make_batch(c, 1);
  LoadedModel load(const std::string& name) { return load_model(dir.file(name)); }
};

TEST_F(Int8LoraTest, ChecksumNamesTheInt8Weights) {
  LoadedModel m8 = load("base8.brt"), m = load("base.brt");
  EXPECT_EQ(adapter_base_checksum(*m8.model), sum8);  // as converted in memory, so from its file
  EXPECT_NE(adapter_base_checksum(*m.model), sum8);   // not its float source
  m8.model->attach_lora(lora_config(), 5);
  EXPECT_EQ(adapter_base_checksum(*m8.model), sum8);  // adapters and head are not the base
}

// Adapters with B = 0 change nothing: the int8 model's logits, bit for bit, where the adapted
// Linears run the int8 model's own ops (attention and pooler; adapters on the feed-forward run
// its two Linears one by one instead of fused, which can move an activation across a rounding
// boundary of its uint8 quantization).
TEST_F(Int8LoraTest, AttachedAdapterChangesNothingUntilTrained) {
  LoadedModel plain = load("base8.brt"), m = load("base8.brt");
  m.model->attach_lora(lora_config({"query", "key", "value", "attention.output.dense",
                                    "pooler.dense"}),
                       5);
  ASSERT_EQ(m.model->quant_mode(), QuantMode::kInt8);
  plain.model->forward(be, b.inputs(), b.targets(), false);
  m.model->forward(be, b.inputs(), b.targets(), false);
  const size_t n = size_t(b.B) * b.T * c.hidden_size, np = size_t(b.B) * c.hidden_size;
  const float *h0 = plain.model->last_hidden_state(), *h1 = m.model->last_hidden_state();
  EXPECT_EQ(std::vector<float>(h0, h0 + n), std::vector<float>(h1, h1 + n));
  const float *p0 = plain.model->pooler_output(), *p1 = m.model->pooler_output();
  EXPECT_EQ(std::vector<float>(p0, p0 + np), std::vector<float>(p1, p1 + np));
  // (The logits differ: the adapted model's head is fp32, trained; the int8 model's is int8.)
}

// An adapter on the pooler: the encoder is the int8 model's, untouched, so its output is the int8
// model's last_hidden_state, and the logits are, in double from there: the int8 pooler Linear
// (the model's own int8 op) + s·(x·Aᵀ)·Bᵀ, tanh, the fp32 classifier.
TEST_F(Int8LoraTest, ForwardIsTheInt8ForwardPlusTheAdapterUpdate) {
  LoadedModel plain = load("base8.brt"), m = load("base8.brt");
  BertModel& M = *m.model;
  M.attach_lora(lora_config({"pooler.dense"}), 5);
  randomize_b(M, 9);
  M.forward(be, b.inputs(), b.targets(), false);
  const std::vector<float> got = M.logits();
  plain.model->forward(be, b.inputs(), b.targets(), false);
  const int B = b.B, T = b.T, C = c.hidden_size, K = 3, r = 3;
  const float* h = plain.model->last_hidden_state();
  std::vector<float> pre(size_t(B) * C);
  const ParamLayout& lay = M.layout();
  const float* P = M.params();
  quant_linear_forward(be, *plain.model->quant()->pooler, pre.data(), h, nullptr,
                       P + lay.at("bert.pooler.dense.bias").offset, B, C, C, T * C);
  be.sync();
  const float* A = P + lay.at("bert.pooler.dense.lora_A.weight").offset;
  const float* Bw = P + lay.at("bert.pooler.dense.lora_B.weight").offset;
  const float* Wc = P + lay.at("classifier.weight").offset;
  const float* bc = P + lay.at("classifier.bias").offset;
  std::vector<float> want;
  std::vector<double> tol;
  for (int i = 0; i < B; ++i) {
    const float* x = h + size_t(i) * T * C;  // [CLS]
    std::vector<double> u(r, 0.0), pooled(C);
    for (int k = 0; k < r; ++k)
      for (int j = 0; j < C; ++j) u[k] += double(x[j]) * A[k * C + j];
    for (int o = 0; o < C; ++o) {
      double d = 0;
      for (int k = 0; k < r; ++k) d += u[k] * Bw[o * r + k];
      pooled[o] = std::tanh(pre[size_t(i) * C + o] + 2.0 * d);  // scaling 6 / 3
    }
    for (int k = 0; k < K; ++k) {
      double l = bc[k];
      for (int o = 0; o < C; ++o) l += pooled[o] * Wc[k * C + o];
      want.push_back(float(l));
      tol.push_back(1e-5 * (1.0 + std::fabs(l)));  // fp32 sums of ≤ 32 O(1) terms, chained
    }
  }
  EXPECT_TRUE(all_close(want, got, tol));
}

// The backward: no gradient of the base; the pooler adapter and the head (smooth in them: nothing
// they change is quantized) against central differences; every encoder adapter against the same
// adapters over the dequantized fp32 base. Those differ only by the uint8 rounding of each int8
// Linear's input (half a step of a 255-step range per element), which reaches the gradients
// through the activations the adapters see; it is largest where the range is set by a few large
// values and most elements are small (the GELU output feeding the last output.dense: there its
// gradients' norms differ by 12 % at a cosine of 0.994). Each tensor: cosine ≥ 0.98, norm within
// 25 %; a missing dX through any int8 Linear would zero the adapters below it instead.
TEST_F(Int8LoraTest, GradientsReachEveryAdapterAndNoneOfTheBase) {
  LoadedModel m = load("base8.brt"), f = load("base8.brt");
  f.model->disable_quantization();  // the dequantized fp32 base
  for (BertModel* x : {m.model.get(), f.model.get()}) {
    x->attach_lora(lora_config(), 5);
    randomize_b(*x, 9);
    x->zero_grad(be);
    x->forward(be, b.inputs(), b.targets(), true);
    x->backward(be);
  }
  BertModel& M = *m.model;
  const size_t n = M.layout().total();
  const std::vector<float> g(M.grads(), M.grads() + n), gf(f.model->grads(), f.model->grads() + n);
  const std::vector<float> theta(M.params(), M.params() + n);
  int adapters = 0;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  for (const ParamInfo& p : M.layout().params()) {
    SCOPED_TRACE(p.name);
    if (M.is_base_param(p.name)) {
      for (size_t i = 0; i < p.numel; ++i) ASSERT_EQ(g[p.offset + i], 0.0f);
      continue;
    }
    adapters += p.name.find(".lora_") != std::string::npos;
    if (p.name.rfind("bert.encoder.", 0) == 0) {
      double dot = 0, n1 = 0, n2 = 0;
      for (size_t i = 0; i < p.numel; ++i) {
        dot += double(g[p.offset + i]) * gf[p.offset + i];
        n1 += double(g[p.offset + i]) * g[p.offset + i];
        n2 += double(gf[p.offset + i]) * gf[p.offset + i];
      }
      ASSERT_GT(n2, 0.0);
      EXPECT_GE(dot / std::sqrt(n1 * n2), 0.98);
      EXPECT_NEAR(std::sqrt(n1 / n2), 1.0, 0.25);
      continue;
    }
    std::vector<float> u(p.numel);
    for (float& x : u) x = nd(rng);
    double analytic = 0;
    for (size_t i = 0; i < p.numel; ++i) analytic += double(g[p.offset + i]) * u[i];
    const float eps = 1e-3f;
    auto shifted = [&](float sgn) {
      for (size_t i = 0; i < p.numel; ++i)
        M.params()[p.offset + i] = theta[p.offset + i] + sgn * eps * u[i];
      return M.forward(be, b.inputs(), b.targets(), true).loss;
    };
    const double numeric = (shifted(1) - shifted(-1)) / (2.0 * eps);
    std::copy(theta.begin() + p.offset, theta.begin() + p.offset + p.numel, M.params() + p.offset);
    EXPECT_NEAR(numeric, analytic, 0.01 * std::fabs(analytic) + 5e-7);
  }
  EXPECT_EQ(adapters, 2 * 13);  // 6 Linears × 2 layers + the pooler, A and B each
}

// Thirty AdamW steps on one batch over the int8 base: the adapters and head fit it (the loss
// falls below half its start); the base's int8 weights never change.
TEST_F(Int8LoraTest, ShortTrainingRunLearns) {
  LoadedModel m = load("base8.brt");
  BertModel& M = *m.model;
  M.attach_lora(lora_config(), 5);
  const std::vector<int8_t> q0(M.quant()->layers[0].query->w8.q,
                               M.quant()->layers[0].query->w8.q + 32 * 32);
  OptimOptions oo;
  oo.learning_rate = 1e-2f, oo.total_steps = 30;
  Trainer t(M, be, oo, MemoryOptions{false, 0, /*recompute=*/true});
  double first = 0, last = 0;
  for (int s = 0; s < 30; ++s) {
    const double loss = t.step(b.inputs(), b.targets()).fwd.loss;
    if (s == 0) first = loss;
    last = loss;
  }
  EXPECT_LT(last, 0.5 * first) << first << " -> " << last;
  EXPECT_EQ(std::vector<int8_t>(M.quant()->layers[0].query->w8.q,
                                M.quant()->layers[0].query->w8.q + 32 * 32),
            q0);
}

TEST_F(Int8LoraTest, AdapterFileRoundTripAndTheOtherBaseRefused) {
  // Over the int8 base: written, applied again, the same logits.
  LoadedModel m = load("base8.brt");
  m.model->attach_lora(lora_config(), 5);
  m.model->set_heads(test::heads_of("sequence"), 1);
  randomize_b(*m.model, 9);
  save_adapter(dir.file("a8.brt"), *m.model, *tok, sum8, {}, "base8.brt");
  m.model->forward(be, b.inputs(), b.targets(), false);
  LoadedModel again = load("base8.brt");
  apply_adapter(again, dir.file("base8.brt"), dir.file("a8.brt"));
  ASSERT_NE(again.model->adapter(), nullptr);  // in place over the int8 base (set_adapter)
  EXPECT_EQ(again.model->lora(), nullptr);
  again.model->forward(be, b.inputs(), b.targets(), false);
  EXPECT_EQ(again.model->logits(), m.model->logits());
  // The trainable copy (copy_adapter, as merge and training take it): the same logits; merging
  // it into the int8 base is refused.
  LoadedModel copy = load("base8.brt");
  copy_adapter(copy, *again.model->adapter());
  copy.model->forward(be, b.inputs(), b.targets(), false);
  EXPECT_EQ(copy.model->logits(), m.model->logits());
  EXPECT_NE(error_of([&] { copy.model->merge_lora(); }).find("is an int8 model"), std::string::npos);

  // Over the float base.
  LoadedModel f = load("base.brt");
  const uint32_t sum = adapter_base_checksum(*f.model);
  f.model->attach_lora(lora_config(), 5);
  save_adapter(dir.file("a.brt"), *f.model, *tok, sum, {}, "base.brt");

  LoadedModel on8 = load("base8.brt"), onf = load("base.brt");
  const std::string e1 =
      error_of([&] { apply_adapter(on8, dir.file("base8.brt"), dir.file("a.brt")); });
  EXPECT_NE(e1.find("was trained on a float32 base (" + checksum_text(sum) + ")"),
            std::string::npos) << e1;
  EXPECT_NE(e1.find("is an int8 model (" + checksum_text(sum8) + ")"), std::string::npos) << e1;
  const std::string e2 =
      error_of([&] { apply_adapter(onf, dir.file("base.brt"), dir.file("a8.brt")); });
  EXPECT_NE(e2.find("was trained on an int8 base (" + checksum_text(sum8) + ")"),
            std::string::npos) << e2;
  EXPECT_NE(e2.find("is a float32 model (" + checksum_text(sum) + ")"), std::string::npos) << e2;
}

}  // namespace
}  // namespace bertrt
