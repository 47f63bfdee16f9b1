// Several LoRA adapters over one base in one process (model/lora_adapter.h, BertModel::set_adapter,
// io/adapter_io.h load_adapter / use_adapter): each adapter run over the shared base gives the
// outputs it gives alone and the outputs of the model that trained it; switching back and forth
// is exact; the base's weights stay the file's clean mapped pages (never copied, never written);
// two models over one base run two adapters on two threads at once; and the refusals (another
// base, a trained-adapter model, training, saving, new heads while an adapter is set).
#include <gtest/gtest.h>

#include <filesystem>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference_backend.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "io/adapter_io.h"
#include "io/model_io.h"
#include "model_runs.h"
#include "op_test_util.h"
#include "test_util.h"

namespace bertrt {
namespace {

std::unique_ptr<Tokenizer> tokenizer_for(const BertConfig& c) {
  TokenizerSpec s;
  s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  while (int(s.vocab.size()) < c.vocab_size) s.vocab.push_back("w" + std::to_string(s.vocab.size()));
  return make_tokenizer(s);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Two adapters of one base file, written as `finetune --lora-r` writes them, and what the models
// that trained them compute (their own arena: the base copied, the adapters trainable).
class SharedBase : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = tokenizer_for(c_);
    BertModel base(c_, HeadsConfig{});
    base.init_weights(3);
    base_path_ = dir_.file("base.brt");
    save_model(base_path_, base, *tok_, {});
    LoadedModel m = load_model(base_path_);
    checksum_ = adapter_base_checksum(*m.model);
    // a: a 3-class classifier over query,value, r 2; b: a regressor over every Linear, r 3.
    LoraConfig qv;
    qv.r = 2, qv.alpha = 4, qv.target_modules = {"query", "value"};
    LoraConfig all;
    all.r = 3, all.alpha = 6, all.target_modules = {"query", "key", "value", "dense"};
    write_adapter("a.brt", test::heads_of("sequence"), qv, 11, "{\"name\":\"task-a\"}", &want_a_);
    write_adapter("b.brt", test::heads_of("regression"), all, 12, "{\"name\":\"task-b\"}",
                  &want_b_);
    base_hidden_ = hidden_of(*m.model);
  }

  void write_adapter(const std::string& name, const HeadsConfig& heads, const LoraConfig& lora,
                     uint32_t seed, const std::string& task, std::vector<float>* logits) {
    LoadedModel m = load_model(base_path_);
    m.model->set_heads(heads, seed);
    m.model->attach_lora(lora, seed);
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 0.2f);
    for (const ParamInfo& p : m.model->layout().params())
      if (p.name.find(".lora_B.") != std::string::npos)  // trained: B ≠ 0
        for (size_t i = 0; i < p.numel; ++i) m.model->params()[p.offset + i] = nd(rng);
    save_adapter(dir_.file(name), *m.model, *tok_, checksum_, {{"task", task}}, "base.brt");
    *logits = logits_of(*m.model);
  }

  std::vector<float> logits_of(BertModel& m) {
    m.forward(be_, batch_.inputs(), Targets{}, false);
    return m.logits();
  }
  std::vector<float> hidden_of(BertModel& m) {
    m.forward(be_, batch_.inputs(), Targets{}, false);
    const float* h = m.last_hidden_state();
    return std::vector<float>(h, h + size_t(batch_.B) * batch_.T * c_.hidden_size);
  }
  std::shared_ptr<const LoraAdapter> load(const std::string& name, const LoadedModel& base) {
    return load_adapter(dir_.file(name), *base.model, checksum_, base_path_);
  }

  test::TempDir dir_;
  BertConfig c_ = test::tiny_config();
  std::unique_ptr<Tokenizer> tok_;
  std::string base_path_;
  uint32_t checksum_ = 0;
  ReferenceBackend be_;
  test::Batch batch_ = test::make_batch(c_, 1);
  std::vector<float> want_a_, want_b_, base_hidden_;
};

TEST_F(SharedBase, TwoAdaptersGiveWhatEachGivesAloneAndSwitchingIsExact) {
  // Alone: a fresh process-like load of the base with one adapter.
  std::vector<float> alone_a, alone_b;
  {
    LoadedModel m = load_model(base_path_);
    use_adapter(m, load("a.brt", m), checksum_);
    alone_a = logits_of(*m.model);
  }
  {
    LoadedModel m = load_model(base_path_);
    use_adapter(m, load("b.brt", m), checksum_);
    alone_b = logits_of(*m.model);
  }
  // The same ops on the same values as the models that trained them (their base copied).
  EXPECT_EQ(alone_a, want_a_);
  EXPECT_EQ(alone_b, want_b_);
  ASSERT_EQ(alone_a.size(), size_t(batch_.B) * 3);
  ASSERT_EQ(alone_b.size(), size_t(batch_.B));

  LoadedModel m = load_model(base_path_);
  ASSERT_TRUE(m.model->params_in_place());
  const auto a = load("a.brt", m), b = load("b.brt", m);
  // An adapter holds its tensors only: the head and the A/B pairs, not the base.
  size_t base_floats = 0;
  for (const ParamInfo& p : m.model->layout().params()) base_floats += p.numel;
  EXPECT_LT(a->bytes(), base_floats * sizeof(float) / 10);
  EXPECT_EQ(a->layout().find("bert.embeddings.word_embeddings.weight"), nullptr);
  for (int round = 0; round < 3; ++round) {
    use_adapter(m, a, checksum_);
    EXPECT_EQ(m.model->heads().resolved_kind(), HeadKind::kSequenceClassification);
    EXPECT_EQ(m.metadata.at("task"), "{\"name\":\"task-a\"}");
    EXPECT_EQ(logits_of(*m.model), alone_a) << "round " << round;
    use_adapter(m, b, checksum_);
    EXPECT_EQ(m.model->heads().resolved_kind(), HeadKind::kRegression);
    EXPECT_EQ(m.metadata.at("task"), "{\"name\":\"task-b\"}");
    EXPECT_EQ(logits_of(*m.model), alone_b) << "round " << round;
  }
  // Detached: the plain base again (no head, no task record, the base's hidden states).
  use_adapter(m, nullptr, checksum_);
  EXPECT_EQ(m.model->adapter(), nullptr);
  EXPECT_EQ(m.model->heads().resolved_kind(), HeadKind::kNone);
  EXPECT_EQ(m.metadata.count("task"), 0u);
  EXPECT_EQ(m.metadata.count("adapter"), 0u);
  EXPECT_EQ(hidden_of(*m.model), base_hidden_);
}

TEST_F(SharedBase, TheBaseStaysTheFilesCleanMappedPages) {
  const std::string before = file_bytes(base_path_);
  LoadedModel m = load_model(base_path_);
  ASSERT_TRUE(m.model->params_in_place());
  const float* params = m.model->params();
  const size_t bytes = m.model->layout().total() * sizeof(float);
  const bool pagemap = MappedFile::pages_clean(params, bytes);
  const auto a = load("a.brt", m), b = load("b.brt", m);
  // The cpu backend as the inference commands run it (weights declared constant: packed by
  // address), switching each forward.
  CpuBackend cpu(1);
  cpu.set_constant_weights(true);
  std::vector<float> first_a, first_b;
  for (int round = 0; round < 3; ++round) {
    use_adapter(m, a, checksum_);
    m.model->forward(cpu, batch_.inputs(), Targets{}, false);
    if (round == 0) first_a = m.model->logits();
    EXPECT_EQ(m.model->logits(), first_a) << "round " << round;
    use_adapter(m, b, checksum_);
    m.model->forward(cpu, batch_.inputs(), Targets{}, false);
    if (round == 0) first_b = m.model->logits();
    EXPECT_EQ(m.model->logits(), first_b) << "round " << round;
  }
  EXPECT_EQ(m.model->params(), params);  // still the mapping: nothing was copied
  // No page of the base's mapping was written (a written page of a private mapping becomes
  // anonymous: pagemap would show it), where /proc/self/pagemap can tell.
  if (pagemap)
    EXPECT_TRUE(MappedFile::pages_clean(params, bytes));
  else
    std::printf("/proc/self/pagemap cannot tell clean pages here: that check is skipped\n");
  EXPECT_EQ(file_bytes(base_path_), before);
}

TEST_F(SharedBase, TwoModelsOfOneBaseRunTwoAdaptersOnTwoThreads) {
  LoadedModel m1 = load_model(base_path_), m2 = load_model(base_path_);
  const auto a = load("a.brt", m1);
  const auto b = load("b.brt", m1);  // loaded once, set on another model of the same base
  use_adapter(m1, a, checksum_);
  use_adapter(m2, b, checksum_);
  std::vector<float> got_a, got_b;
  auto run = [&](LoadedModel& m, std::vector<float>* out) {
    ReferenceBackend be;
    for (int i = 0; i < 5; ++i) {
      m.model->forward(be, batch_.inputs(), Targets{}, false);
      if (i == 0) *out = m.model->logits();
      if (m.model->logits() != *out) out->clear();
    }
  };
  std::thread t1(run, std::ref(m1), &got_a), t2(run, std::ref(m2), &got_b);
  t1.join(), t2.join();
  EXPECT_EQ(got_a, want_a_);
  EXPECT_EQ(got_b, want_b_);
  // One adapter on two models at once.
  use_adapter(m2, a, checksum_);
  std::thread t3(run, std::ref(m1), &got_a), t4(run, std::ref(m2), &got_b);
  t3.join(), t4.join();
  EXPECT_EQ(got_a, want_a_);
  EXPECT_EQ(got_b, want_a_);
}

TEST_F(SharedBase, RefusesAnotherBaseAndWhatAnAdapterCannotDo) {
  // Another base of the same shapes: its checksum differs, at load and when set.
  BertModel other(c_, HeadsConfig{});
  other.init_weights(4);
  save_model(dir_.file("other.brt"), other, *tok_, {});
  LoadedModel o = load_model(dir_.file("other.brt"));
  const uint32_t other_sum = adapter_base_checksum(*o.model);
  const std::string e1 = error_of(
      [&] { load_adapter(dir_.file("a.brt"), *o.model, other_sum, dir_.file("other.brt")); });
  EXPECT_NE(e1.find("was trained on another base"), std::string::npos) << e1;
  EXPECT_NE(e1.find(dir_.file("a.brt")), std::string::npos) << e1;
  LoadedModel m = load_model(base_path_);
  const auto a = load("a.brt", m);
  const std::string e2 = error_of([&] { use_adapter(o, a, other_sum); });
  EXPECT_NE(e2.find("was trained on another base"), std::string::npos) << e2;
  EXPECT_EQ(o.model->adapter(), nullptr);
  // Another shape of base: refused by the model itself.
  BertConfig wide = c_;
  wide.hidden_size = 36, wide.num_attention_heads = 4;
  BertModel w(wide, HeadsConfig{});
  const std::string e3 = error_of([&] { w.set_adapter(a); });
  EXPECT_NE(e3.find("hidden_size 32"), std::string::npos) << e3;

  use_adapter(m, a, checksum_);
  const std::string e4 =
      error_of([&] { m.model->forward(be_, batch_.inputs(), batch_.targets(), true); });
  EXPECT_NE(e4.find("training forward"), std::string::npos) << e4;
  const std::string e5 = error_of([&] { save_model(dir_.file("x.brt"), *m.model, *tok_, {}); });
  EXPECT_NE(e5.find("save_adapter"), std::string::npos) << e5;
  EXPECT_FALSE(std::filesystem::exists(dir_.file("x.brt")));
  const std::string e6 = error_of([&] { m.model->set_heads(test::heads_of("token"), 1); });
  EXPECT_NE(e6.find("detach it first"), std::string::npos) << e6;
  LoraConfig qv;
  qv.target_modules = {"query"};
  const std::string e7 = error_of([&] { m.model->attach_lora(qv, 1); });
  EXPECT_NE(e7.find("detach it first"), std::string::npos) << e7;
  EXPECT_EQ(logits_of(*m.model), want_a_);  // the refusals changed nothing

  // A model that carries trained adapters of its own takes no inference adapter.
  LoadedModel t = load_model(base_path_);
  t.model->set_heads(test::heads_of("sequence"), 1);
  t.model->attach_lora(qv, 1);
  const std::string e8 = error_of([&] { t.model->set_adapter(a); });
  EXPECT_NE(e8.find("trained LoRA adapters of its own"), std::string::npos) << e8;
}

TEST_F(SharedBase, CopiedIntoTheArenaItMergesAsBefore) {
  // bertrt merge's path: the adapter copied into the model as trainable parameters.
  LoadedModel m = load_model(base_path_);
  copy_adapter(m, *load("a.brt", m));
  ASSERT_NE(m.model->lora(), nullptr);
  EXPECT_EQ(logits_of(*m.model), want_a_);
  m.model->merge_lora();
  // W + s·B·A in one weight against two products: fp32 rounding of O(1) logits through 2 layers.
  EXPECT_TRUE(test::all_close(logits_of(*m.model), want_a_, {2e-5}));
}

}  // namespace
}  // namespace bertrt
