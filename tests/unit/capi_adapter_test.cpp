// LoRA adapters through the C API (bertrt.h "LoRA adapters"): bertrt_adapter_load /
// bertrt_model_set_adapter / bertrt_adapter_free give what the library gives with each adapter,
// switch exactly, describe the adapter's head and task, share one adapter between two handles
// on two threads, and refuse NULL handles, an adapter of another base, a model file given as an
// adapter and a trainer on a model that runs an adapter, naming what is wrong.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "bertrt/bertrt.h"
#include "io/adapter_io.h"
#include "io/model_io.h"
#include "model_runs.h"
#include "test_util.h"

namespace bertrt {
namespace {

std::unique_ptr<Tokenizer> tokenizer_for(const BertConfig& c) {
  TokenizerSpec s;
  s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  while (int(s.vocab.size()) < c.vocab_size) s.vocab.push_back("w" + std::to_string(s.vocab.size()));
  return make_tokenizer(s);
}

class CapiAdapter : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = tokenizer_for(c_);
    BertModel base(c_, HeadsConfig{});
    base.init_weights(3);
    base_ = dir_.file("base.brt");
    save_model(base_, base, *tok_, {});
    BertModel other(c_, HeadsConfig{});
    other.init_weights(4);
    other_ = dir_.file("other.brt");
    save_model(other_, other, *tok_, {});
    HeadsConfig two;
    two.labels = {"negative", "positive"}, two.task = "sst2";
    write_adapter("a.brt", two, {"query", "value"}, 11);
    write_adapter("b.brt", test::heads_of("sequence"), {"query", "key", "value", "dense"}, 12);
  }

  void write_adapter(const std::string& name, const HeadsConfig& heads,
                     std::vector<std::string> targets, uint32_t seed) {
    LoadedModel m = load_model(base_);
    const uint32_t sum = adapter_base_checksum(*m.model);
    m.model->set_heads(heads, seed);
    LoraConfig lora;
    lora.r = 2, lora.alpha = 4, lora.target_modules = std::move(targets);
    m.model->attach_lora(lora, seed);
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 0.2f);
    for (const ParamInfo& p : m.model->layout().params())
      if (p.name.find(".lora_B.") != std::string::npos)
        for (size_t i = 0; i < p.numel; ++i) m.model->params()[p.offset + i] = nd(rng);
    save_adapter(dir_.file(name), *m.model, *tok_, sum, {}, "base.brt");
  }

  bertrt_model* load(const std::string& path) {
    bertrt_model_options o;
    bertrt_model_options_init(&o);
    o.num_threads = 1;
    bertrt_model* m = nullptr;
    EXPECT_EQ(bertrt_model_load(path.c_str(), &o, &m), BERTRT_OK) << bertrt_last_error();
    return m;
  }
  bertrt_adapter* adapter(bertrt_model* base, const std::string& name) {
    bertrt_adapter* a = nullptr;
    EXPECT_EQ(bertrt_adapter_load(base, dir_.file(name).c_str(), &a), BERTRT_OK)
        << bertrt_last_error();
    return a;
  }
  std::vector<float> classify(bertrt_model* m, int K) {
    const bertrt_batch b{batch_.B, batch_.T, batch_.ids.data(), batch_.types.data(),
                         batch_.mask.data()};
    std::vector<float> out(size_t(batch_.B) * K);
    EXPECT_EQ(bertrt_classify(m, &b, out.data(), out.size()), BERTRT_OK) << bertrt_last_error();
    return out;
  }
  // The library's logits for `adapter` alone over a fresh load of the base, on the cpu backend
  // the C API runs (one thread, weights declared constant).
  std::vector<float> library_logits(const std::string& adapter) {
    bertrt_model* m = load(base_);
    bertrt_adapter* a = this->adapter(m, adapter);
    EXPECT_EQ(bertrt_model_set_adapter(m, a), BERTRT_OK) << bertrt_last_error();
    bertrt_heads h{};
    bertrt_model_heads(m, &h);
    std::vector<float> out = classify(m, h.num_labels);
    bertrt_adapter_free(a);
    bertrt_model_free(m);
    return out;
  }

  test::TempDir dir_;
  BertConfig c_ = test::tiny_config();
  std::unique_ptr<Tokenizer> tok_;
  std::string base_, other_;
  test::Batch batch_ = test::make_batch(c_, 1);
};

TEST_F(CapiAdapter, TwoAdaptersOverOneBaseGiveWhatEachGivesAlone) {
  const std::vector<float> alone_a = library_logits("a.brt"), alone_b = library_logits("b.brt");
  // The library's own run of adapter a (reference for what the C API computes).
  {
    LoadedModel lm = load_model(base_);
    apply_adapter(lm, base_, dir_.file("a.brt"));
    CpuBackend be(1);
    be.set_constant_weights(true);
    lm.model->forward(be, batch_.inputs(), Targets{}, false);
    EXPECT_EQ(lm.model->logits(), alone_a);
  }
  bertrt_model* m = load(base_);
  bertrt_adapter* a = adapter(m, "a.brt");
  bertrt_adapter* b = adapter(m, "b.brt");
  ASSERT_TRUE(a && b);
  bertrt_heads h{};
  ASSERT_EQ(bertrt_model_heads(m, &h), BERTRT_OK);
  EXPECT_EQ(h.kind, BERTRT_HEAD_NONE);
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(bertrt_model_set_adapter(m, a), BERTRT_OK) << bertrt_last_error();
    ASSERT_EQ(bertrt_model_heads(m, &h), BERTRT_OK);
    EXPECT_EQ(h.kind, BERTRT_HEAD_SEQUENCE_CLASSIFICATION);
    EXPECT_EQ(h.num_labels, 2);
    const char* s = nullptr;
    ASSERT_EQ(bertrt_model_task(m, &s), BERTRT_OK);
    EXPECT_STREQ(s, "sst2");
    ASSERT_EQ(bertrt_model_label(m, 1, &s), BERTRT_OK);
    EXPECT_STREQ(s, "positive");
    EXPECT_EQ(classify(m, 2), alone_a) << "round " << round;
    ASSERT_EQ(bertrt_model_set_adapter(m, b), BERTRT_OK) << bertrt_last_error();
    ASSERT_EQ(bertrt_model_heads(m, &h), BERTRT_OK);
    EXPECT_EQ(h.num_labels, 3);
    ASSERT_EQ(bertrt_model_label(m, 2, &s), BERTRT_OK);
    EXPECT_STREQ(s, "c");
    EXPECT_EQ(classify(m, 3), alone_b) << "round " << round;
  }
  // Freed while set: the model keeps its own reference.
  bertrt_adapter_free(b);
  EXPECT_EQ(classify(m, 3), alone_b);
  // Detached: the base again, without a head.
  ASSERT_EQ(bertrt_model_set_adapter(m, nullptr), BERTRT_OK) << bertrt_last_error();
  ASSERT_EQ(bertrt_model_heads(m, &h), BERTRT_OK);
  EXPECT_EQ(h.kind, BERTRT_HEAD_NONE);
  std::vector<float> out(size_t(batch_.B) * 3);
  const bertrt_batch bb{batch_.B, batch_.T, batch_.ids.data(), nullptr, nullptr};
  EXPECT_EQ(bertrt_classify(m, &bb, out.data(), out.size()), BERTRT_E_UNSUPPORTED);
  bertrt_adapter_free(a);
  bertrt_model_free(m);
}

TEST_F(CapiAdapter, OneAdapterOnTwoHandlesOnTwoThreads) {
  const std::vector<float> alone_a = library_logits("a.brt");
  bertrt_model* m1 = load(base_);
  bertrt_model* m2 = load(base_);
  bertrt_adapter* a = adapter(m1, "a.brt");  // loaded once, for both handles
  ASSERT_EQ(bertrt_model_set_adapter(m1, a), BERTRT_OK) << bertrt_last_error();
  ASSERT_EQ(bertrt_model_set_adapter(m2, a), BERTRT_OK) << bertrt_last_error();
  bertrt_adapter_free(a);
  std::vector<float> got1, got2;
  auto run = [&](bertrt_model* m, std::vector<float>* got) {
    for (int i = 0; i < 10; ++i) {
      std::vector<float> out = classify(m, 2);
      if (i == 0) *got = out;
      if (out != *got) got->clear();
    }
  };
  std::thread t1(run, m1, &got1), t2(run, m2, &got2);
  t1.join(), t2.join();
  EXPECT_EQ(got1, alone_a);
  EXPECT_EQ(got2, alone_a);
  bertrt_model_free(m1);
  bertrt_model_free(m2);
}

TEST_F(CapiAdapter, BadInputIsAnErrorNamingIt) {
  bertrt_model* m = load(base_);
  bertrt_adapter* a = nullptr;
  EXPECT_EQ(bertrt_adapter_load(nullptr, dir_.file("a.brt").c_str(), &a),
            BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("bertrt_adapter_load: argument 'model' is NULL"),
            std::string::npos)
      << bertrt_last_error();
  EXPECT_EQ(bertrt_adapter_load(m, nullptr, &a), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("'path' is NULL"), std::string::npos);
  EXPECT_EQ(bertrt_adapter_load(m, dir_.file("a.brt").c_str(), nullptr), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("'out' is NULL"), std::string::npos);
  EXPECT_EQ(bertrt_model_set_adapter(nullptr, nullptr), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("bertrt_model_set_adapter: argument 'model'"),
            std::string::npos);
  bertrt_adapter_free(nullptr);  // accepted, as every *_free
  EXPECT_EQ(bertrt_adapter_load(m, dir_.file("missing.brt").c_str(), &a), BERTRT_E_IO);
  EXPECT_NE(std::string(bertrt_last_error()).find("missing.brt"), std::string::npos);
  // A model file as the adapter.
  EXPECT_EQ(bertrt_adapter_load(m, other_.c_str(), &a), BERTRT_E_MODEL);
  EXPECT_NE(std::string(bertrt_last_error()).find("a model file, not a LoRA adapter"),
            std::string::npos)
      << bertrt_last_error();
  EXPECT_EQ(a, nullptr);
  // An adapter of another base: refused at load over that base...
  bertrt_model* o = load(other_);
  EXPECT_EQ(bertrt_adapter_load(o, dir_.file("a.brt").c_str(), &a), BERTRT_E_MODEL);
  EXPECT_NE(std::string(bertrt_last_error()).find("was trained on another base"),
            std::string::npos)
      << bertrt_last_error();
  EXPECT_EQ(a, nullptr);
  // ... and when one loaded for its own base is set on another.
  a = adapter(m, "a.brt");
  EXPECT_EQ(bertrt_model_set_adapter(o, a), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("was trained on another base"),
            std::string::npos)
      << bertrt_last_error();
  bertrt_heads h{};
  ASSERT_EQ(bertrt_model_heads(o, &h), BERTRT_OK);
  EXPECT_EQ(h.kind, BERTRT_HEAD_NONE);  // unchanged
  // A trainer refuses a model running an adapter (its base is frozen under the adapter).
  ASSERT_EQ(bertrt_model_set_adapter(m, a), BERTRT_OK) << bertrt_last_error();
  bertrt_finetune_options fo;
  bertrt_finetune_options_init(&fo);
  fo.task = "sst2", fo.max_steps = 1;
  bertrt_trainer* t = nullptr;
  EXPECT_EQ(bertrt_trainer_create(m, &fo, nullptr, &t), BERTRT_E_STATE);
  EXPECT_NE(std::string(bertrt_last_error()).find("detach it first"), std::string::npos)
      << bertrt_last_error();
  EXPECT_EQ(t, nullptr);
  bertrt_adapter_free(a);
  bertrt_model_free(o);
  bertrt_model_free(m);
}

}  // namespace
}  // namespace bertrt
