// The backend contract (backends/backend.h "memory and execution") held by the layers above it:
// the model, its heads, the trainer, QAT, calibration and the int8 path run on the checked
// backend (backends/checked/: its own memory only, ops deferred until sync) and must give the
// cpu backend's results bit for bit. A host touch of backend memory between ops, an op argument
// that is not backend memory, or a host read before sync() breaks that equality or throws.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/checked/checked_backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/device_array.h"
#include "core/error.h"
#include "model/bert_model.h"
#include "train/trainer.h"

namespace bertrt {
namespace {

BertConfig tiny_config() {
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

Batch make_batch(const BertConfig& c, uint32_t seed) {
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

HeadsConfig heads_of(const std::string& kind) {
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

void append(std::vector<float>& to, const float* p, size_t n) {
  if (p) to.insert(to.end(), p, p + n);
}

enum class Mode { kFloat, kQat, kInt8 };

// Three training steps (two with accumulation over two micro-batches), then an eval forward with
// every output read back. kInt8: QAT steps, then conversion and int8 forwards.
Outcome run_model(Backend& be, const std::string& kind, Mode mode) {
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

void expect_same(const Outcome& a, const Outcome& b) {
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

class Contract : public ::testing::TestWithParam<std::tuple<std::string, Mode>> {};

TEST_P(Contract, CheckedBackendEqualsCpuBitForBit) {
  const auto [kind, mode] = GetParam();
  CpuBackend cpu(1);
  CheckedBackend checked(std::make_unique<CpuBackend>(1), /*max_batch=*/7);
  const Outcome want = run_model(cpu, kind, mode);
  const Outcome got = run_model(checked, kind, mode);
  expect_same(want, got);
  // The checked backend really deferred and submitted in bounded batches.
  EXPECT_GT(checked.stats().submits, checked.stats().syncs);
  EXPECT_GE(checked.stats().submits * 7, checked.stats().ops);
}

std::string mode_name(Mode m) {
  return m == Mode::kFloat ? "fp32" : m == Mode::kQat ? "qat" : "int8";
}

INSTANTIATE_TEST_SUITE_P(
    Heads, Contract,
    ::testing::Combine(::testing::Values("pretraining", "sequence", "regression", "token", "span"),
                       ::testing::Values(Mode::kFloat, Mode::kQat, Mode::kInt8)),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" + mode_name(std::get<1>(info.param));
    });

// A training step's host round trips: the forward's read-back and the clipping norm. (QAT adds
// one per Linear for its observer, which stays on the host.)
TEST(Contract, Fp32TrainingStepSyncsTwice) {
  const BertConfig c = tiny_config();
  BertModel m(c, heads_of("pretraining"));
  m.init_weights(3);
  CheckedBackend be(std::make_unique<CpuBackend>(1));
  OptimOptions o;
  o.total_steps = 2;
  Trainer trainer(m, be, o);
  const Batch b = make_batch(c, 5);
  trainer.step(b.inputs(), b.targets());
  const int64_t before = be.stats().syncs;
  trainer.step(b.inputs(), b.targets());
  EXPECT_EQ(be.stats().syncs - before, 2);
}

TEST(Contract, HostMemoryPassedToAnOpIsAnErrorNamingOpAndArgument) {
  CheckedBackend be(std::make_unique<CpuBackend>(1));
  DeviceArray<float> x(be, 8);
  std::vector<float> host(8);
  try {
    be.add(x.data(), x.data(), host.data(), 8);
    FAIL() << "expected bertrt::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("add: argument 'b'"), std::string::npos) << msg;
  }
  // One element past the block is outside it too.
  EXPECT_THROW(be.fill(x.data() + 1, 0.0f, 8), Error);
  be.fill(x.data(), 1.0f, 8);  // in bounds
}

TEST(Contract, ResultsReachTheHostOnlyAtSync) {
  CheckedBackend be(std::make_unique<CpuBackend>(1));
  DeviceArray<float> x(be, 4);
  be.fill(x.data(), 2.5f, 4);
  float got[4] = {0, 0, 0, 0};
  be.download(got, x.data(), sizeof got);
  EXPECT_EQ(got[0], 0.0f);  // recorded, not run
  be.sync();
  for (float v : got) EXPECT_EQ(v, 2.5f);
}

// Memory of a backend that is gone is gone: arrays forget it, and data left there is an error.
TEST(Contract, ArraysOutlivingTheirBackendForgetItsMemory) {
  HostDeviceBuffer params;
  params.assign(16, 1.0f);
  DeviceArray<float> scratch;
  {
    CheckedBackend be(std::make_unique<CpuBackend>(1));
    scratch.ensure(be, 32);
    be.scale(params.on(be), 2.0f, 16);
  }
  EXPECT_FALSE(scratch.alive());
  EXPECT_THROW(params.host(), Error);
}

}  // namespace
}  // namespace bertrt
