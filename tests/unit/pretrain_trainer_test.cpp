// The pre-training trainer on a tiny BERT and synthetic documents (no data files needed):
// checkpoint + resume bit-identity through a real model file (data stream state included), gradient
// accumulation, activation recomputation, frozen parameters, and non-finite steps.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "io/model_io.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/pretrain.h"

namespace bertrt {
namespace {

constexpr int kVocab = 60;
constexpr int32_t kPad = 0, kCls = 2, kSep = 3, kMask = 4;

BertConfig tiny_config() {
  BertConfig c;
  c.vocab_size = kVocab;
  c.hidden_size = 16;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 2;
  c.intermediate_size = 32;
  c.max_position_embeddings = 32;
  return c;
}

std::unique_ptr<BertModel> tiny_model(uint64_t seed = 7) {
  HeadsConfig heads;
  heads.mlm = heads.nsp = true;
  auto m = std::make_unique<BertModel>(tiny_config(), heads);
  m->init_weights(seed);
  return m;
}

std::unique_ptr<Tokenizer> tiny_tokenizer() {
  std::vector<std::string> v = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (int i = 5; i < kVocab; ++i) v.push_back(fmt::format("w{}", i));
  return std::make_unique<Tokenizer>(Vocab(v), TokenizerOptions{});
}

// 12 documents of 3–8 sentences of 4–12 ids in [5, kVocab): a few batches per epoch.
Documents synthetic_documents() {
  std::mt19937_64 rng(99);
  Documents docs(12);
  for (auto& d : docs) {
    d.resize(3 + rng() % 6);
    for (auto& s : d) {
      s.resize(4 + rng() % 9);
      for (auto& id : s) id = int32_t(5 + rng() % (kVocab - 5));
    }
  }
  return docs;
}

PretrainingOptions data_options() {
  PretrainingOptions p;
  p.max_seq_length = 24;
  p.max_predictions_per_seq = 4;
  p.seed = 5;
  return p;
}

PretrainingStream make_stream(const Documents& docs, int batch_size) {
  return PretrainingStream(docs, data_options(), batch_size, kCls, kSep, kMask, kPad, kVocab);
}

bool bit_equal(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

OptimOptions optim(OptimizerKind kind, int64_t total, int accumulation = 1) {
  OptimOptions o;
  o.optimizer = kind;
  o.learning_rate = 5e-3f;
  o.total_steps = total;
  o.warmup_steps = 2;
  o.eps = kind == OptimizerKind::kBert ? 1e-6f : 1e-8f;
  o.gradient_accumulation_steps = accumulation;
  return o;
}

TEST(GradientAccumulation, SliceBatchRebasesPositions) {
  const Documents docs = synthetic_documents();
  PretrainingStream s = make_stream(docs, 4);
  const Batch b = s.next();
  const Batch lo = slice_batch(b, 0, 2), hi = slice_batch(b, 2, 2);
  EXPECT_EQ(lo.masked_lm_positions.size() + hi.masked_lm_positions.size(), b.masked_lm_positions.size());
  for (size_t i = 0; i < hi.masked_lm_positions.size(); ++i)
    EXPECT_EQ(hi.input_ids[hi.masked_lm_positions[i]],
              b.input_ids[hi.masked_lm_positions[i] + 2 * b.seq_len]);
  EXPECT_EQ(hi.next_sentence_labels[1], b.next_sentence_labels[3]);
  EXPECT_THROW(slice_batch(b, 3, 2), Error);
}

// ------------------------------------------------------------------------ resume -------------

struct ResumeCase {
  OptimizerKind kind;
  int accumulation;
  MemoryOptions memory;
};

// Runs `steps` more steps; saves to `path` after step `save_at` (if > 0).
void train(BertModel& model, Trainer& trainer, PretrainingStream& stream, int64_t total,
           int64_t save_at, const std::string& path, const Tokenizer& tok) {
  pretrain(trainer, stream, total, [&](const PretrainStepLog& log) {
    if (log.step == save_at)
      save_model(path, model, tok, {{"k", "v"}},
                 capture_training_state(trainer, stream.save_state(), uint64_t(log.step)));
  });
}

void check_resume(const ResumeCase& c) {
  test::TempDir dir;
  const std::string ckpt = dir.file("ckpt.brt");
  const Documents docs = synthetic_documents();
  auto tok = tiny_tokenizer();
  auto be = make_backend("cpu");
  const int64_t M = 7, N = 3;

  // Uninterrupted M steps (saving at N, as a real run with --save-steps does).
  auto full = tiny_model();
  PretrainingStream s1 = make_stream(docs, 4);
  Trainer t1(*full, *be, optim(c.kind, M, c.accumulation), c.memory);
  train(*full, t1, s1, M, N, ckpt, *tok);
  ASSERT_EQ(t1.steps_done(), M);

  // "Killed" after the save at N: everything rebuilt from the file.
  LoadedModel m = load_model(ckpt, LoadOptions{/*training_state=*/true});
  ASSERT_TRUE(m.training_state);
  EXPECT_EQ(m.training_state->step, N);
  PretrainingStream s2 = make_stream(docs, 4);
  s2.restore_state(m.training_state->rng_state);
  Trainer t2(*m.model, *be, optim(c.kind, M, c.accumulation), c.memory);
  restore_training_state(t2, *m.training_state, ckpt);
  EXPECT_EQ(t2.steps_done(), N);
  train(*m.model, t2, s2, M, -1, ckpt, *tok);

  ASSERT_EQ(t2.steps_done(), M);
  EXPECT_TRUE(bit_equal(full->params(), m.model->params(), full->layout().total()))
      << "resumed weights differ from the uninterrupted run";
  EXPECT_EQ(t1.optimizer().m(), t2.optimizer().m());
  EXPECT_EQ(t1.optimizer().v(), t2.optimizer().v());
  EXPECT_EQ(t1.optimizer().step_count(), t2.optimizer().step_count());
}

TEST(Resume, AdamWIsBitIdenticalToAnUninterruptedRun) {
  check_resume({OptimizerKind::kAdamW, 1, {}});
}
TEST(Resume, BertOptimizerWithAccumulationAndFrozenLayersIsBitIdentical) {
  MemoryOptions mem;
  mem.freeze_embeddings = true;
  mem.freeze_layers = 1;
  mem.recompute = true;
  check_resume({OptimizerKind::kBert, 2, mem});
}

TEST(Resume, RefusesOtherSettingsAndMissingMoments) {
  test::TempDir dir;
  const std::string ckpt = dir.file("ckpt.brt");
  const Documents docs = synthetic_documents();
  auto tok = tiny_tokenizer();
  auto be = make_backend("cpu");
  auto model = tiny_model();
  PretrainingStream s = make_stream(docs, 4);
  Trainer t(*model, *be, optim(OptimizerKind::kAdamW, 4));
  train(*model, t, s, 2, 2, ckpt, *tok);
  LoadedModel m = load_model(ckpt, LoadOptions{/*training_state=*/true});

  OptimOptions other = optim(OptimizerKind::kAdamW, 4);
  other.learning_rate = 1e-3f;
  Trainer t_lr(*m.model, *be, other);
  EXPECT_EQ(training_state_mismatches(t_lr, *m.training_state).size(), 1u);
  try {
    restore_training_state(t_lr, *m.training_state, ckpt);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lr: checkpoint"), std::string::npos) << e.what();
  }
  Trainer t_bert(*m.model, *be, optim(OptimizerKind::kBert, 4));
  EXPECT_THROW(restore_training_state(t_bert, *m.training_state, ckpt), Error);
  MemoryOptions frozen;
  frozen.freeze_embeddings = true;  // fewer moment tensors than the checkpoint holds
  Trainer t_frozen(*m.model, *be, optim(OptimizerKind::kAdamW, 4), frozen);
  EXPECT_THROW(restore_training_state(t_frozen, *m.training_state, ckpt), Error);
}

// ------------------------------------------------------------------------ accumulation -------

// A batch of 4 whose two halves have the same number of masked positions, so that the mean of
// the two micro-batch MLM means equals the mean over the whole batch.
Batch balanced_batch() {
  const Documents docs = synthetic_documents();
  PretrainingStream s = make_stream(docs, 4);
  for (int i = 0; i < 50; ++i) {
    Batch b = s.next();
    if (slice_batch(b, 0, 2).masked_lm_positions.size() == slice_batch(b, 2, 2).masked_lm_positions.size())
      return b;
  }
  ADD_FAILURE() << "no balanced batch found";
  return s.next();
}

std::vector<float> step_grads(const Batch& b, int K, double* loss) {
  auto model = tiny_model();
  auto be = make_backend("cpu");
  OptimOptions o = optim(OptimizerKind::kAdamW, 1, K);
  o.max_grad_norm = 0;  // compare the raw mean gradients
  Trainer t(*model, *be, o);
  std::vector<Batch> parts;
  for (int k = 0; k < K; ++k) parts.push_back(slice_batch(b, k * 4 / K, 4 / K));
  std::vector<MicroBatch> micro;
  for (const Batch& p : parts) micro.push_back({batch_inputs(p), batch_targets(p)});
  *loss = t.step(micro).fwd.loss;
  return std::vector<float>(model->grads(), model->grads() + model->layout().total());
}

TEST(GradientAccumulation, TwoHalvesGiveTheFullBatchGradient) {
  const Batch b = balanced_batch();
  double loss1 = 0, loss2 = 0;
  const std::vector<float> g1 = step_grads(b, 1, &loss1), g2 = step_grads(b, 2, &loss2);
  // Equal in exact arithmetic (NSP: per-example mean over equal halves; MLM: equal counts); in
  // float the sums run in another order (two GEMM reductions of B/2 rows added vs one of B rows),
  // so they agree to rounding: 1e-5 of the largest gradient entry (float eps 6e-8 × the ~100
  // terms of the longest reductions here).
  double gmax = 0;
  for (float x : g1) gmax = std::max(gmax, double(std::abs(x)));
  for (size_t i = 0; i < g1.size(); ++i) ASSERT_NEAR(g1[i], g2[i], 1e-5 * gmax) << "entry " << i;
  EXPECT_NEAR(loss1, loss2, 1e-6 * loss1);
}

TEST(GradientAccumulation, LossIsTheMeanOfMicroBatchMeans) {
  // Hugging Face semantics: each micro-batch's MLM loss is a mean over its own masked positions,
  // scaled by 1/K; with unequal counts this is not the mean over the whole batch's positions.
  const Documents docs = synthetic_documents();
  PretrainingStream s = make_stream(docs, 4);
  const Batch b = s.next();
  auto model = tiny_model();
  // `want` comes from inference forwards: with the attention through T × T buffers they compute
  // the training forward's floats (the streamed kernels round otherwise: f32_attention.h).
  test::ScopedEnv attention("BERTRT_ATTENTION", "gemm");
  auto be = make_backend("cpu");
  double want = 0;
  for (int k = 0; k < 2; ++k) {
    const Batch p = slice_batch(b, 2 * k, 2);
    want += 0.5 * model->forward(*be, batch_inputs(p), batch_targets(p), false).loss;
  }
  Trainer t(*model, *be, optim(OptimizerKind::kAdamW, 1, 2));
  const Batch p0 = slice_batch(b, 0, 2), p1 = slice_batch(b, 2, 2);
  const StepResult r = t.step({{batch_inputs(p0), batch_targets(p0)}, {batch_inputs(p1), batch_targets(p1)}});
  EXPECT_DOUBLE_EQ(r.fwd.loss, want);
  EXPECT_EQ(r.fwd.mlm.count, int(b.masked_lm_positions.size()));
  EXPECT_EQ(r.fwd.nsp.count, 4);
}

// ------------------------------------------------------------------------ memory options -----

std::vector<float> grads_with(const std::string& backend, const BackwardPlan& plan) {
  const Documents docs = synthetic_documents();
  PretrainingStream s = make_stream(docs, 4);
  const Batch b = s.next();
  auto model = tiny_model();
  model->set_backward_plan(plan);
  auto be = make_backend(backend);
  model->grads();
  model->zero_grad();
  model->forward(*be, batch_inputs(b), batch_targets(b), true);
  model->backward(*be);
  return std::vector<float>(model->grads(), model->grads() + model->layout().total());
}

TEST(Recompute, GradientsAreBitIdentical) {
  // The recomputed forward runs the same ops on the same inputs, so every activation, and so
  // every gradient, has the same bits.
  for (const std::string& backend : backend_names()) {
    SCOPED_TRACE(backend);
    try {
      make_backend(backend);
    } catch (const Error&) {  // vulkan without a device
      continue;
    }
    BackwardPlan plain, redo;
    redo.recompute = true;
    EXPECT_EQ(grads_with(backend, plain), grads_with(backend, redo));
    BackwardPlan frozen{1, false, false}, frozen_redo{1, false, true};
    EXPECT_EQ(grads_with(backend, frozen), grads_with(backend, frozen_redo));
  }
}

// --recompute trades speed for memory on the backend too: the cpu backend then bounds its
// training GEMMs' copies (blocks that change no float: f32_gemm_test.cpp).
TEST(Recompute, AsksTheBackendToPreferMemory) {
  for (bool recompute : {false, true}) {
    auto model = tiny_model();
    CpuBackend be(1);
    MemoryOptions mem;
    mem.recompute = recompute;
    Trainer t(*model, be, optim(OptimizerKind::kAdamW, 2), mem);
    EXPECT_EQ(be.prefers_memory(), recompute);
  }
}

// Frozen embeddings: no op writes the word table's gradient (not the tied decoder either), so its
// pages, fresh zero mappings (HostFloats), never enter the resident set.
TEST(Freeze, FrozenWordEmbeddingGradientTakesNoMemory) {
  if (test::emulated()) GTEST_SKIP() << "pagemap under emulation";
  BertConfig c = tiny_config();
  c.vocab_size = 32768;  // a word table of 2 MB, so the gradients are mapped (ids stay < kVocab)
  HeadsConfig heads;
  heads.mlm = heads.nsp = true;
  for (bool freeze : {true, false}) {
    SCOPED_TRACE(freeze ? "frozen" : "trainable");
    BertModel model(c, heads);
    model.init_weights(7);
    const Documents docs = synthetic_documents();
    PretrainingStream s(docs, data_options(), 4, kCls, kSep, kMask, kPad, c.vocab_size);
    auto be = make_backend("cpu");
    MemoryOptions mem;
    mem.freeze_embeddings = freeze;
    Trainer t(model, *be, optim(OptimizerKind::kAdamW, 2), mem);
    pretrain(t, s, 2, nullptr);
    const ParamInfo& w = *model.layout().find("bert.embeddings.word_embeddings.weight");
    const size_t page = 4096, bytes = w.numel * sizeof(float);
    const auto at = reinterpret_cast<uintptr_t>(model.grads() + w.offset);
    const uintptr_t first = (at + page - 1) / page * page, last = (at + bytes) / page * page;
    const int resident = test::mapped_pages(reinterpret_cast<const void*>(first),
                                            (last - first) / page, /*exclusive=*/true);
    if (resident < 0) GTEST_SKIP() << "/proc/self/pagemap cannot be read here";
    if (freeze) {
      EXPECT_EQ(resident, 0);
    } else {
      EXPECT_EQ(resident, int((last - first) / page));  // the decoder writes every row
    }
  }
}

TEST(Freeze, BackwardStopsAtTheFirstTrainableLayer) {
  const std::vector<float> all = grads_with("cpu", {});
  const std::vector<float> top = grads_with("cpu", {2, false, false});  // layers 0, 1 not run
  const ParamLayout layout = tiny_model()->layout();
  for (const ParamInfo& p : layout.params()) {
    SCOPED_TRACE(p.name);
    // The word embeddings too: frozen, their tied decoder's gradient is not computed either.
    const bool below = p.name.rfind("bert.encoder.layer.0.", 0) == 0 ||
                       p.name.rfind("bert.encoder.layer.1.", 0) == 0 ||
                       p.name.rfind("bert.embeddings.", 0) == 0;
    const float* a = all.data() + p.offset;
    const float* t = top.data() + p.offset;
    if (below) {
      EXPECT_EQ(std::vector<float>(t, t + p.numel), std::vector<float>(p.numel, 0.0f));
    } else {
      EXPECT_TRUE(bit_equal(a, t, p.numel));  // same ops above the cut
    }
  }
}

TEST(Freeze, FrozenParamsStayFixedOthersMove) {
  for (bool freeze_embeddings : {true, false}) {
    SCOPED_TRACE(freeze_embeddings ? "embeddings frozen" : "embeddings trainable");
    const Documents docs = synthetic_documents();
    PretrainingStream s = make_stream(docs, 4);
    auto model = tiny_model();
    const std::vector<float> before(model->params(), model->params() + model->layout().total());
    auto be = make_backend("cpu");
    MemoryOptions mem;
    mem.freeze_embeddings = freeze_embeddings;
    mem.freeze_layers = 2;
    Trainer t(*model, *be, optim(OptimizerKind::kAdamW, 3), mem);
    pretrain(t, s, 3, nullptr);
    size_t moments = 0;
    for (const ParamInfo& p : model->layout().params()) {
      const bool frozen = p.name.rfind("bert.encoder.layer.0.", 0) == 0 ||
                          p.name.rfind("bert.encoder.layer.1.", 0) == 0 ||
                          (freeze_embeddings && p.name.rfind("bert.embeddings.", 0) == 0);
      const bool same = bit_equal(model->params() + p.offset, before.data() + p.offset, p.numel);
      EXPECT_EQ(same, frozen) << p.name;
      EXPECT_EQ(t.optimizer().moment_layout().find(p.name) == nullptr, frozen) << p.name;
      moments += frozen ? 0 : 1;
    }
    EXPECT_EQ(t.optimizer().moment_layout().params().size(), moments);
  }
  auto model = tiny_model();
  auto be = make_backend("cpu");
  MemoryOptions too_many;
  too_many.freeze_layers = 4;
  EXPECT_THROW(Trainer(*model, *be, optim(OptimizerKind::kAdamW, 1), too_many), Error);
  // Refused before any loop over K layers: INT_MAX once took hours (a fresh user found it).
  too_many.freeze_layers = std::numeric_limits<int>::max();
  EXPECT_THROW(Trainer(*model, *be, optim(OptimizerKind::kAdamW, 1), too_many), Error);
}

// ------------------------------------------------------------------------ non-finite ---------

TEST(NonFinite, StopsNamingTheStepOrSkipsWithoutUpdate) {
  const Documents docs = synthetic_documents();
  PretrainingStream s = make_stream(docs, 4);
  const Batch b = s.next();
  auto be = make_backend("cpu");
  for (bool skip : {false, true}) {
    auto model = tiny_model();
    // A real cause: an overflowing weight (as a diverged run has) makes the loss non-finite.
    model->params()[model->layout().at("cls.seq_relationship.weight").offset] = INFINITY;
    const std::vector<float> before(model->params(), model->params() + model->layout().total());
    OptimOptions o = optim(OptimizerKind::kAdamW, 3);
    o.skip_nonfinite = skip;
    Trainer t(*model, *be, o);
    if (!skip) {
      try {
        t.step(batch_inputs(b), batch_targets(b));
        ADD_FAILURE() << "no error";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("step 1:"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
      }
      EXPECT_EQ(t.steps_done(), 0);
    } else {
      const StepResult r = t.step(batch_inputs(b), batch_targets(b));
      EXPECT_TRUE(r.skipped);
      EXPECT_EQ(t.steps_done(), 1);
      EXPECT_EQ(t.skipped_steps(), 1);
      EXPECT_EQ(t.optimizer().step_count(), 0);
    }
    EXPECT_TRUE(bit_equal(model->params(), before.data(), before.size()));
  }
}

// With skipping on, a step whose finite gradient overflows the parameters is an error, not a
// success: every later step would be skipped and the run would end on a broken model. Here the
// decoupled weight decay of an unused position's embedding (no gradient, value 1e36) takes it
// past FLT_MAX: w·(1 − lr·wd) = 1e36 · (1 − 1e5 · 0.01).
TEST(NonFinite, SkippingRefusesAnUpdateThatOverflowsTheParameters) {
  const Documents docs = synthetic_documents();
  PretrainingStream s = make_stream(docs, 4);  // 24 positions of the 32: row 31 is never read
  const Batch b = s.next();
  auto be = make_backend("cpu");
  auto model = tiny_model();
  const auto& pe = model->layout().at("bert.embeddings.position_embeddings.weight");
  model->params()[pe.offset + 31 * tiny_config().hidden_size] = 1e36f;
  OptimOptions o = optim(OptimizerKind::kAdamW, 3);
  o.warmup_steps = 0;
  o.learning_rate = 1e5f;
  o.weight_decay = 0.01f;
  o.skip_nonfinite = true;
  Trainer t(*model, *be, o);
  try {
    t.step(batch_inputs(b), batch_targets(b));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step 1: the update made the parameters non-finite"),
              std::string::npos)
        << e.what();
  }
  // Without the overflow the same step is applied.
  auto healthy = tiny_model();
  Trainer h(*healthy, *be, o);
  EXPECT_FALSE(h.step(batch_inputs(b), batch_targets(b)).skipped);
  EXPECT_EQ(h.optimizer().step_count(), 1);
}

}  // namespace
}  // namespace bertrt
