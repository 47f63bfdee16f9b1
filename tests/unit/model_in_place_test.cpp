// The memory of a loaded model (io/model_io.cpp load_model; docs/explanation/performance.md,
// "Memory and cold start"): an fp32 file's parameters used in place from its copy-on-write mapping, an older layout
// loaded by copy, training from a mapped model leaving the file untouched, and an int8 model that
// holds no fp32 copy of its int8 weights and reads their integers from the mapping. Each asserts on
// what the model holds and computes, never on resident memory or time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "backends/backend.h"
#include "io/model_io.h"
#include "model/bert_model.h"
#include "test_util.h"

namespace bertrt {
namespace {

BertConfig small_config() {
  BertConfig c;
  c.vocab_size = 97, c.hidden_size = 32, c.num_hidden_layers = 2, c.num_attention_heads = 4;
  c.intermediate_size = 37, c.max_position_embeddings = 24, c.type_vocab_size = 2;
  return c;
}

HeadsConfig classifier_heads() {
  HeadsConfig h;
  h.labels = {"a", "b", "c"};
  h.task = "test";
  return h;
}

std::unique_ptr<Tokenizer> tokenizer_for(const BertConfig& c) {
  TokenizerSpec s;
  s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  while (int(s.vocab.size()) < c.vocab_size)
    s.vocab.push_back("w" + std::to_string(s.vocab.size()));
  return make_tokenizer(s);
}

struct Batch {
  int B = 3, T = 11;
  std::vector<int32_t> ids, types, mask, labels;
  EncoderInputs inputs() const { return {B, T, ids.data(), types.data(), mask.data()}; }
  Targets targets() const {
    Targets t;
    t.labels = labels.data();
    return t;
  }
};

Batch random_batch(const BertConfig& c, uint32_t seed) {
  std::mt19937 rng{seed};
  Batch b;
  for (int i = 0; i < b.B; ++i) {
    const int len = b.T / 2 + int(rng() % uint32_t(b.T / 2 + 1));
    for (int t = 0; t < b.T; ++t) {
      b.ids.push_back(t < len ? 5 + int(rng() % uint32_t(c.vocab_size - 5)) : 0);
      b.types.push_back(t < len / 2 ? 0 : 1);
      b.mask.push_back(t < len);
    }
    b.labels.push_back(int(rng() % 3u));
  }
  return b;
}

std::unique_ptr<BertModel> random_model(const BertConfig& c) {
  auto m = std::make_unique<BertModel>(c, classifier_heads());
  m->init_weights(11);
  for (const ParamInfo& p : m->layout().params())  // larger weights: every layer matters
    if (p.name.find("LayerNorm") == std::string::npos)
      for (size_t i = 0; i < p.numel; ++i) m->params()[p.offset + i] *= 8.0f;
  return m;
}

std::vector<float> logits_of(BertModel& m, Backend& be, const Batch& b) {
  m.forward(be, b.inputs(), b.targets(), false);
  return m.logits();
}

bool inside(const void* p, size_t n, const MappedFile& map) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const auto* q = static_cast<const uint8_t*>(p);
  return q >= map.data() && q + n <= map.data() + (map.size() + page - 1) / page * page;
}

// Finds the unique little-endian u64 `value` in bytes [0, limit).
size_t find_u64(const std::string& bytes, uint64_t value, size_t limit) {
  const std::string needle(reinterpret_cast<const char*>(&value), 8);
  const size_t at = bytes.find(needle);
  EXPECT_LT(at, limit) << value;
  EXPECT_EQ(bytes.find(needle, at + 1), std::string::npos) << value << " not unique";
  return at;
}

TEST(ModelInPlace, Fp32ParametersPointIntoTheMappingAndComputeTheSame) {
  const BertConfig c = small_config();
  auto m = random_model(c);
  auto be = make_backend("cpu");
  const Batch b = random_batch(c, 1);
  const std::vector<float> want = logits_of(*m, *be, b);
  test::TempDir dir;
  save_model(dir.file("m.brt"), *m, *tokenizer_for(c), {});

  LoadedModel l = load_model(dir.file("m.brt"));
  ASSERT_TRUE(l.model->params_in_place());
  const MappedFile& map = *l.file.mapping();
  EXPECT_TRUE(inside(l.model->params(), l.model->layout().total() * sizeof(float), map));
  for (const ParamInfo& p : l.model->layout().params())
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(l.model->params() + p.offset),
              l.file.at(p.name).data)
        << p.name;
  EXPECT_EQ(logits_of(*l.model, *be, b), want);
}

// A file whose tensors are not in the arena's order (as older writers or other tools may lay them
// out) loads by copy, with the same values.
TEST(ModelInPlace, AnotherLayoutLoadsByCopy) {
  const BertConfig c = small_config();
  auto m = random_model(c);
  auto be = make_backend("cpu");
  const Batch b = random_batch(c, 2);
  const std::vector<float> want = logits_of(*m, *be, b);
  test::TempDir dir;
  save_model(dir.file("m.brt"), *m, *tokenizer_for(c), {});

  // Swap the segments of two tensors of the same size (their bytes and their offsets): every
  // record still points at its own bytes, with its own checksum, but out of layout order.
  std::string bytes = test::read_bytes(dir.file("m.brt"));
  const std::string qn = "bert.encoder.layer.0.attention.self.query.weight",
                    kn = "bert.encoder.layer.1.attention.self.key.weight";
  uint64_t q_off = 0, k_off = 0, n = 0, buffer_end = 0;
  {
    const ModelFile f = ModelFile::open(dir.file("m.brt"));
    const uint8_t* base = f.mapping()->data();
    q_off = uint64_t(f.at(qn).data - base), k_off = uint64_t(f.at(kn).data - base);
    n = f.at(qn).nbytes;
    ASSERT_EQ(n, f.at(kn).nbytes);
    uint32_t size = 0;
    std::memcpy(&size, base, 4);
    buffer_end = size + 4u;
  }
  const size_t q_field = find_u64(bytes, q_off, buffer_end),
               k_field = find_u64(bytes, k_off, buffer_end);
  std::memcpy(&bytes[q_field], &k_off, 8);
  std::memcpy(&bytes[k_field], &q_off, 8);
  std::string q_bytes = bytes.substr(q_off, n);
  bytes.replace(q_off, n, bytes.substr(k_off, n));
  bytes.replace(k_off, n, q_bytes);
  test::write_bytes(dir.file("swapped.brt"), test::restamped_header_crc(bytes));

  LoadedModel l = load_model(dir.file("swapped.brt"));
  EXPECT_FALSE(l.model->params_in_place());
  EXPECT_TRUE(l.file.checksums_verified());
  ASSERT_EQ(l.model->layout().total(), m->layout().total());
  EXPECT_EQ(std::memcmp(l.model->params(), m->params(), m->layout().total() * sizeof(float)), 0);
  EXPECT_EQ(logits_of(*l.model, *be, b), want);
}

// Training writes private copies of the mapping's pages: the parameters move, the file does not.
TEST(ModelInPlace, TrainingAMappedModelLeavesTheFileUntouched) {
  const BertConfig c = small_config();
  auto m = random_model(c);
  test::TempDir dir;
  save_model(dir.file("m.brt"), *m, *tokenizer_for(c), {});
  const std::string before = test::read_bytes(dir.file("m.brt"));

  LoadedModel l = load_model(dir.file("m.brt"));
  ASSERT_TRUE(l.model->params_in_place());
  auto be = make_backend("cpu");
  const Batch b = random_batch(c, 3);
  l.model->zero_grad(*be);
  l.model->forward(*be, b.inputs(), b.targets(), true);
  l.model->backward(*be);
  float* w = l.model->params();
  const float* g = l.model->grads();
  for (size_t i = 0; i < l.model->layout().total(); ++i) w[i] -= 0.5f * g[i];  // one SGD step
  EXPECT_NE(std::memcmp(w, m->params(), m->layout().total() * sizeof(float)), 0);

  EXPECT_EQ(test::read_bytes(dir.file("m.brt")), before);
  const ModelFile again = ModelFile::open(dir.file("m.brt"));  // checksums verified
  EXPECT_EQ(std::memcmp(again.at("classifier.weight").data,
                        m->params() + m->layout().at("classifier.weight").offset,
                        again.at("classifier.weight").nbytes),
            0);
  // The trained model saves like any other.
  save_model(dir.file("trained.brt"), *l.model, *tokenizer_for(c), {});
  LoadedModel t = load_model(dir.file("trained.brt"));
  EXPECT_EQ(std::memcmp(t.model->params(), w, m->layout().total() * sizeof(float)), 0);
}

// Fine-tuning copies the parameters into the model's own arena (set_heads); then the mapping's
// pages are given back (release_file_pages_once_copied), not kept resident beside the copy for the
// whole run. Before the copy it does nothing (the model reads the mapping); after it the model
// computes as before and the file's records read the same bytes, mapped again from the file.
TEST(ModelInPlace, FileMappingGivenBackOnceSetHeadsCopied) {
  if (test::emulated()) GTEST_SKIP() << "pagemap under emulation";
  const BertConfig c = small_config();
  auto m = random_model(c);
  test::TempDir dir;
  save_model(dir.file("m.brt"), *m, *tokenizer_for(c), {});
  LoadedModel l = load_model(dir.file("m.brt"));
  ASSERT_TRUE(l.model->params_in_place());
  const MappedFile& map = *l.file.mapping();
  const size_t page = size_t(::sysconf(_SC_PAGESIZE)), pages = map.size() / page;
  if (test::mapped_pages(map.data(), pages) < 0) GTEST_SKIP() << "pagemap cannot be read here";
  ASSERT_GT(test::mapped_pages(map.data(), pages), 0);  // the checksum pass read them
  release_file_pages_once_copied(l);                      // in place: kept
  EXPECT_EQ(test::mapped_pages(map.data(), pages), int(pages));

  HeadsConfig h = classifier_heads();
  h.labels = {"x", "y", "z"};  // relabelled: same shapes, and still copied into a new arena
  l.model->set_heads(h, 5);
  ASSERT_FALSE(l.model->params_in_place());
  const std::vector<float> copied(l.model->params(), l.model->params() + l.model->layout().total());
  auto be = make_backend("cpu");
  const Batch b = random_batch(c, 4);
  const std::vector<float> want = logits_of(*l.model, *be, b);
  release_file_pages_once_copied(l);
  EXPECT_EQ(test::mapped_pages(map.data(), pages), 0);
  EXPECT_EQ(std::memcmp(l.model->params(), copied.data(), copied.size() * sizeof(float)), 0);
  EXPECT_EQ(logits_of(*l.model, *be, b), want);
  const std::string qn = "bert.encoder.layer.1.attention.self.query.weight";
  EXPECT_EQ(std::memcmp(l.file.at(qn).data, m->params() + m->layout().at(qn).offset,
                        l.file.at(qn).nbytes),
            0);
}

// An int8 file: no fp32 values for the weights with an int8 form, their integers read in place
// from the mapping, the same logits as the in-memory int8 model; disable_quantization() gives back
// exactly the dequantized weights the in-memory conversion keeps.
class ModelInPlaceInt8 : public ::testing::TestWithParam<bool> {};

TEST_P(ModelInPlaceInt8, HoldsNoFp32CopyOfItsInt8Weights) {
  const bool int8_emb = GetParam();
  const BertConfig c = small_config();
  auto m = random_model(c);
  auto be = make_backend("cpu");
  m->begin_calibration(int8_emb);
  for (uint32_t s = 0; s < 3; ++s) {
    const Batch cal = random_batch(c, 10 + s);
    m->forward(*be, cal.inputs(), cal.targets(), false);
  }
  m->finish_calibration();
  m->convert_to_int8();
  const Batch b = random_batch(c, 4);
  const std::vector<float> want = logits_of(*m, *be, b);
  test::TempDir dir;
  save_model(dir.file("i8.brt"), *m, *tokenizer_for(c), {});

  LoadedModel l = load_model(dir.file("i8.brt"));
  ASSERT_EQ(l.model->quant_mode(), QuantMode::kInt8);
  EXPECT_FALSE(l.model->params_in_place());
  const MappedFile& map = *l.file.mapping();
  const float* params = l.model->params();
  auto no_fp32 = [&](const std::string& name) {
    EXPECT_FALSE(l.model->holds_fp32(name)) << name;
    const ParamInfo& p = l.model->layout().at(name);
    for (size_t i = 0; i < p.numel; ++i)
      if (params[p.offset + i] != 0.0f) return ADD_FAILURE() << name << "[" << i << "] is held";
  };
  for (const LinearSite& s : linear_sites(c, l.model->heads())) {
    no_fp32(s.weight);
    EXPECT_TRUE(l.model->holds_fp32(s.bias)) << s.bias;
    const QuantLinear& q = l.model->quant()->linears().at(s.name);
    EXPECT_TRUE(q.own8.q.empty()) << s.name;  // no owned copy of the integers
    EXPECT_EQ(q.w8.q, reinterpret_cast<const int8_t*>(l.file.at(s.weight).data)) << s.name;
    EXPECT_TRUE(inside(q.w8.q, size_t(s.out_f) * s.in_f, map)) << s.name;
  }
  const std::string word = "bert.embeddings.word_embeddings.weight";
  if (int8_emb) {
    no_fp32(word);
    EXPECT_EQ(l.model->quant()->emb.word.w8.data(),
              reinterpret_cast<const int8_t*>(l.file.at(word).data));
  } else {
    EXPECT_TRUE(l.model->holds_fp32(word));
  }
  EXPECT_EQ(logits_of(*l.model, *be, b), want);

  l.model->disable_quantization();
  m->disable_quantization();
  for (const ParamInfo& p : m->layout().params()) {
    EXPECT_TRUE(l.model->holds_fp32(p.name));
    EXPECT_EQ(
        std::memcmp(l.model->params() + p.offset, m->params() + p.offset, p.numel * sizeof(float)),
        0)
        << p.name;
  }
  EXPECT_EQ(logits_of(*l.model, *be, b), logits_of(*m, *be, b));
}

INSTANTIATE_TEST_SUITE_P(Embeddings, ModelInPlaceInt8, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "int8" : "float"; });

}  // namespace
}  // namespace bertrt
