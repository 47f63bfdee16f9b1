// Packed batches (EncoderInputs::cu_seqlens; embed_texts / rerank_scores with packing on): the
// same embeddings and scores as padded batches, for every pooling mode, odd lengths, several
// token budgets, the reference, cpu (1, 2, 3 threads: identical) and checked backends, fp32 and
// int8; and what a packed forward refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "embed/embedder.h"
#include "io/model_io.h"
#include "model/bert_model.h"

namespace bertrt {
namespace {

BertConfig config() {
  BertConfig c;
  c.vocab_size = 13;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 37;
  c.max_position_embeddings = 40;
  return c;
}

TokenizerSpec vocab() {
  TokenizerSpec s;
  s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e", "f", "g", "h"};
  return s;
}

// Texts of 0 to 40 words (2 to 42 tokens, cut at 32: some truncated), in no length order.
std::vector<std::string> texts() {
  std::mt19937 rng(5);
  std::vector<std::string> out;
  for (int i = 0; i < 23; ++i) {
    const int words = int(rng() % 41);
    std::string t;
    for (int w = 0; w < words; ++w) t += std::string(w ? " " : "") + char('a' + rng() % 8);
    out.push_back(t);
  }
  out.push_back("");
  out.push_back("h");
  return out;
}

std::unique_ptr<BertModel> model_with(HeadsConfig h) {
  auto m = std::make_unique<BertModel>(config(), h);
  m->init_weights(17);
  // Biases and LayerNorm parameters away from 0 / 1, so that nothing cancels by accident.
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 0.1f);
  for (const ParamInfo& p : m->layout().params())
    if (p.name.find("bias") != std::string::npos || p.name.find("LayerNorm") != std::string::npos)
      for (size_t i = 0; i < p.numel; ++i) m->params()[p.offset + i] += nd(rng);
  return m;
}

HeadsConfig embedding_heads() {
  HeadsConfig h;
  h.embedding = EmbeddingConfig{};
  h.embedding->pooling.mean_tokens = true;
  h.embedding->max_seq_length = 32;
  return h;
}

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Largest |a − b|.
float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float d = a.size() == b.size() ? 0.0f : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

std::vector<float> embed(BertModel& m, Backend& be, EmbedOptions o, bool packing,
                         int max_batch_tokens = 16384) {
  const auto tok = make_tokenizer(vocab());
  o.packing = packing;
  o.max_batch_tokens = max_batch_tokens;
  o.batch_size = 4;
  return embed_texts(m, *tok, be, texts(), o);
}

// fp32: the padded and packed forwards run the same per-row operations, and a padded key's
// attention weight is exactly 0 (e^(−10000·…) underflows), so they differ by rounding at most;
// 1e-5 on unit-norm embeddings is a few float32 ulps of growth through two layers.
constexpr float kFp32Tol = 1e-5f;

TEST(PackedBatch, EmbeddingsEqualPaddedForEveryPoolingMode) {
  auto m = model_with(embedding_heads());
  auto ref = make_backend("reference");
  auto checked = make_backend("checked");
  int compared = 0;
  for (const char* pooling : {"cls", "mean", "max", "mean_sqrt_len_tokens", "weightedmean",
                              "lasttoken"}) {
    EmbedOptions o;
    o.pooling = pooling;
    const std::vector<float> want = embed(*m, *ref, o, false);
    // Budgets: one sequence a batch mostly, a few a batch, everything in one.
    for (int budget : {1, 45, 100, 16384}) {
      EXPECT_LE(max_diff(want, embed(*m, *ref, o, true, budget)), kFp32Tol)
          << pooling << ", reference, budget " << budget;
    }
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      CpuBackend cpu(threads);
      const std::vector<float> padded = embed(*m, cpu, o, false), packed = embed(*m, cpu, o, true, 45);
      if (first.empty()) first = packed;
      EXPECT_TRUE(same(first, packed)) << pooling << ": " << threads << " threads";
      EXPECT_LE(max_diff(padded, packed), kFp32Tol) << pooling << ", cpu, " << threads;
      // cpu against the scalar reference: other kernels, other roundings.
      EXPECT_LE(max_diff(want, packed), 1e-4f) << pooling << ", cpu, " << threads;
    }
    EXPECT_TRUE(same(first, embed(*m, *checked, o, true, 45))) << pooling << ", checked";
    ++compared;
  }
  EXPECT_EQ(compared, 6);
}

// The model's own head: a prompt left out of the pooling (include_prompt false), two modes
// concatenated, Dense, Normalize, and Matryoshka truncation.
TEST(PackedBatch, FullHeadWithPromptEqualsPadded) {
  HeadsConfig h = embedding_heads();
  EmbeddingConfig& e = *h.embedding;
  e.pooling = PoolingConfig{};
  e.pooling.weightedmean_tokens = e.pooling.lasttoken = true;
  e.pooling.include_prompt = false;
  e.dense.push_back({"2_Dense", 64, 24, true, "torch.nn.modules.activation.Tanh"});
  e.normalize = true;
  e.prompts = {{"query", "a b c "}};
  auto m = model_with(h);
  EmbedOptions o;
  o.prompt_name = "query";
  o.dimensions = 16;
  CpuBackend cpu(2);
  const std::vector<float> padded = embed(*m, cpu, o, false);
  ASSERT_EQ(padded.size(), texts().size() * 16);
  EXPECT_LE(max_diff(padded, embed(*m, cpu, o, true, 60)), kFp32Tol);
  auto ref = make_backend("reference");
  EXPECT_LE(max_diff(embed(*m, *ref, o, false), embed(*m, *ref, o, true, 60)), kFp32Tol);
}

// int8 (post-training quantization): the activations' quantization is per tensor with frozen
// ranges, so a row quantizes alike in either batch; the fp32 parts differ by rounding only, which
// can move a value across a rounding boundary of the int8 grid: 1e-3 allows a few such steps.
TEST(PackedBatch, Int8EmbeddingsEqualPadded) {
  auto m = model_with(embedding_heads());
  CpuBackend cpu(2);
  m->begin_calibration(false);
  EmbedOptions o;
  embed(*m, cpu, o, false);
  m->finish_calibration();
  m->convert_to_int8();
  const std::vector<float> padded = embed(*m, cpu, o, false);
  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    CpuBackend be(threads);
    const std::vector<float> packed = embed(*m, be, o, true, 45);
    if (first.empty()) first = packed;
    EXPECT_TRUE(same(first, packed)) << threads << " threads";
    EXPECT_LE(max_diff(padded, packed), 1e-3f) << threads << " threads";
  }
}

TEST(PackedBatch, RerankScoresEqualPadded) {
  HeadsConfig h;
  h.kind = HeadKind::kRegression;
  auto m = model_with(h);
  const auto tok = make_tokenizer(vocab());
  CpuBackend cpu(2);
  auto ref = make_backend("reference");
  for (Backend* be : {static_cast<Backend*>(&cpu), ref.get()}) {
    RerankOptions o;
    o.max_length = 30;
    o.batch_size = 3;
    o.packing = false;
    const std::vector<float> padded = rerank_scores(*m, *tok, *be, "a b", texts(), o);
    o.packing = true;
    o.max_batch_tokens = 50;
    EXPECT_LE(max_diff(padded, rerank_scores(*m, *tok, *be, "a b", texts(), o)), kFp32Tol)
        << be->name();
  }
}

TEST(PackedBatch, ForwardRefusesWhatItCannotRun) {
  auto m = model_with(embedding_heads());
  auto be = make_backend("reference");
  const std::vector<int32_t> ids = {2, 5, 3, 2, 6, 7, 3}, cu = {0, 3, 7};
  EncoderInputs in{2, 4, ids.data(), nullptr, nullptr};
  in.cu_seqlens = cu.data();
  m->forward(*be, in, Targets{}, false);
  EXPECT_THROW(m->forward(*be, in, Targets{}, true), Error);  // training
  const float scores[] = {0.5f, 1.0f};
  Targets t;
  t.scores = scores;
  EXPECT_THROW(m->forward(*be, in, t, false), Error);  // targets
  in.T = 3;  // the second sequence has 4 rows
  EXPECT_THROW(m->forward(*be, in, Targets{}, false), Error);
  HeadsConfig tokens;
  tokens.kind = HeadKind::kTokenClassification;
  tokens.labels = {"O", "B"};
  auto tm = model_with(tokens);
  in.T = 4;
  EXPECT_THROW(tm->forward(*be, in, Targets{}, false), Error);
  EXPECT_THROW(embed(*m, *be, EmbedOptions{}, true, 0), Error);  // --max-batch-tokens 0
}

}  // namespace
}  // namespace bertrt
