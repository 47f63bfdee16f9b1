// A tiny model run for every head kind in fp32, QAT and int8 — three training steps (two with
// gradient accumulation), then an eval forward with every output read back — shared by the tests
// that compare backends on the whole model (contract_test, vulkan_test).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "model/bert_model.h"
#include "train/trainer.h"

namespace bertrt::test {

inline BertConfig tiny_config() {
  BertConfig c;
  c.vocab_size = 97, c.hidden_size = 32, c.num_hidden_layers = 2;
  c.num_attention_heads = 4, c.intermediate_size = 37;
  c.max_position_embeddings = 24, c.type_vocab_size = 2;
  return c;
}

// One batch with targets for every head kind (each model reads the ones its heads need).
struct Batch {
  int B = 3, T = 11;
  std::vector<int32_t> ids, types, mask, positions, mlm_labels, nsp, labels, token_labels, start,
      end;
  std::vector<float> scores;
  EncoderInputs inputs() const { return {B, T, ids.data(), types.data(), mask.data()}; }
  Targets targets() const {
    Targets t;
    t.mlm_positions = positions.data(), t.mlm_labels = mlm_labels.data();
    t.num_masked = int(positions.size());
    t.nsp_labels = nsp.data(), t.labels = labels.data(), t.scores = scores.data();
    t.token_labels = token_labels.data();
    t.start_positions = start.data(), t.end_positions = end.data();
    return t;
  }
};

inline Batch make_batch(const BertConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Batch b;
  for (int i = 0; i < b.B; ++i) {
    const int len = b.T - 3 * i;
    for (int t = 0; t < b.T; ++t) {
      b.ids.push_back(t < len ? 5 + int(rng() % uint32_t(c.vocab_size - 5)) : 0);
      b.types.push_back(t < len / 2 ? 0 : 1);
      b.mask.push_back(t < len);
      b.token_labels.push_back(t == 0 || t >= len ? -100 : int(rng() % 3));
    }
    for (int t = 1; t < len; t += 3) {
      b.positions.push_back(i * b.T + t);
      b.mlm_labels.push_back(t == 4 ? -100 : 5 + int(rng() % uint32_t(c.vocab_size - 5)));
    }
    b.nsp.push_back(i % 2), b.labels.push_back(i % 3), b.scores.push_back(0.5f * i - 0.3f);
    b.start.push_back(2 + i), b.end.push_back(i == 1 ? b.T + 4 : 4 + i);  // one end past T
  }
  return b;
}

inline HeadsConfig heads_of(const std::string& kind) {
  HeadsConfig h;
  if (kind == "pretraining") h.mlm = h.nsp = true;
  if (kind == "sequence") h.labels = {"a", "b", "c"};
  if (kind == "regression") h.kind = HeadKind::kRegression;
  if (kind == "token") h.kind = HeadKind::kTokenClassification, h.labels = {"O", "B", "I"};
  if (kind == "span") h.kind = HeadKind::kQuestionAnswering;
  return h;
}

// Everything a run produced, compared bit for bit.
struct Outcome {
  std::vector<double> losses;
  std::vector<int> counts;
  std::vector<float> outputs, params, moments;
};

inline void append(std::vector<float>& to, const float* p, size_t n) {
  if (p) to.insert(to.end(), p, p + n);
}

enum class Mode { kFloat, kQat, kInt8 };

// Three training steps (two with accumulation over two micro-batches), then an eval forward with
// every output read back. kInt8: QAT steps, then conversion and int8 forwards.
inline Outcome run_model(Backend& be, const std::string& kind, Mode mode) {
  const BertConfig c = tiny_config();
  BertModel m(c, heads_of(kind));
  m.init_weights(11);
  if (mode != Mode::kFloat) {
    QatConfig q;
    q.observer_momentum = 0.1f;
    m.enable_qat(q);
  }
  OptimOptions o;
  o.learning_rate = 3e-3f, o.total_steps = 3, o.warmup_steps = 1;
  // eps 1e-3, not 1e-8: AdamW divides each update by √v̂ + eps, which turns a gradient of pure
  // rounding noise (~1e-9) into a full ±lr step; with eps 1e-3 such an element barely moves, so
  // runs of different arithmetic stay as close as their ops are (the AdamW op itself is
  // compared at the default eps in the op tests).
  o.eps = 1e-3f;
  Trainer trainer(m, be, o);
  const Batch b1 = make_batch(c, 1), b2 = make_batch(c, 2);
  Outcome r;
  for (int step = 0; step < 3; ++step) {
    std::vector<MicroBatch> micro{{b1.inputs(), b1.targets()}};
    if (step > 0) micro.push_back({b2.inputs(), b2.targets()});
    const StepResult s = trainer.step(micro);
    r.losses.insert(r.losses.end(),
                    {s.fwd.loss, s.fwd.mlm.loss, s.fwd.nsp.loss, s.fwd.cls.loss, s.grad_norm});
    r.counts.insert(r.counts.end(), {s.fwd.mlm.count, s.fwd.mlm.correct, s.fwd.nsp.correct,
                                     s.fwd.cls.count, s.fwd.cls.correct});
  }
  if (mode == Mode::kInt8) m.convert_to_int8();
  const ForwardResult f = m.forward(be, b2.inputs(), b2.targets(), /*training=*/false);
  r.losses.insert(r.losses.end(), {f.loss, f.mlm.loss, f.nsp.loss, f.cls.loss});
  r.counts.insert(r.counts.end(), {f.mlm.correct, f.nsp.correct, f.cls.correct});
  const size_t N = size_t(b2.B) * b2.T;
  append(r.outputs, m.last_hidden_state(), N * c.hidden_size);
  append(r.outputs, m.pooler_output(), size_t(b2.B) * c.hidden_size);
  append(r.outputs, m.seq_relationship_logits().data(), m.seq_relationship_logits().size());
  append(r.outputs, m.logits().data(), m.logits().size());
  append(r.outputs, m.start_logits().data(), m.start_logits().size());
  append(r.outputs, m.end_logits().data(), m.end_logits().size());
  if (m.heads().mlm) {
    append(r.outputs, m.prediction_logits(), b2.positions.size() * c.vocab_size);
    append(r.outputs, m.mlm_logits_all(be), N * c.vocab_size);
  }
  append(r.params, m.params(), m.layout().total());
  if (mode != Mode::kInt8) append(r.params, m.grads(), m.layout().total());
  const std::vector<float> mo = trainer.optimizer().m(), vo = trainer.optimizer().v();
  append(r.moments, mo.data(), mo.size());
  append(r.moments, vo.data(), vo.size());
  return r;
}

inline void expect_same(const Outcome& a, const Outcome& b) {
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.counts, b.counts);
  // Bit patterns, so that NaN or −0 would count too.
  auto bits = [](const std::vector<float>& v) {
    std::vector<uint32_t> u(v.size());
    if (!v.empty()) std::memcpy(u.data(), v.data(), v.size() * sizeof(float));
    return u;
  };
  EXPECT_EQ(bits(a.outputs), bits(b.outputs));
  EXPECT_EQ(bits(a.params), bits(b.params));
  EXPECT_EQ(bits(a.moments), bits(b.moments));
  EXPECT_FALSE(a.outputs.empty());
}

// Closeness of two runs of different arithmetic (other summation orders): every loss within
// loss_tol relative; outputs and parameters (after the AdamW steps) within state_tol relative to
// the part's largest value.
inline void expect_close(const Outcome& a, const Outcome& b, double loss_tol, double state_tol) {
  auto rel = [](const std::vector<float>& x, const std::vector<float>& y) {
    double m = 1e-30, d = 0;
    for (size_t i = 0; i < x.size(); ++i)
      m = std::max(m, std::fabs(double(x[i]))), d = std::max(d, std::fabs(double(x[i]) - y[i]));
    return d / m;
  };
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i)
    EXPECT_NEAR(a.losses[i], b.losses[i], loss_tol * std::max(1.0, std::fabs(a.losses[i]))) << i;
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  ASSERT_EQ(a.params.size(), b.params.size());
  const double ro = rel(a.outputs, b.outputs), rp = rel(a.params, b.params);
  EXPECT_LE(ro, state_tol) << "outputs";
  EXPECT_LE(rp, state_tol) << "parameters";
  std::printf("relative difference: outputs %.2e, parameters %.2e\n", ro, rp);
}

}  // namespace bertrt::test
