// load_model on .brt files whose config claims more than their tensors hold: a clear error naming
// the file, before the model (sized by the config) is allocated — checked by the process's peak
// resident memory (ctest runs each test in its own process, so the peak is this test's).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "io/model_io.h"
#include "test_util.h"

namespace bertrt {
namespace {

using test::TempDir;

long max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;  // kB on Linux
}

// An honest 1-layer BERT (H 64, I 256, vocab 6) in memory; `config` is what the file claims.
struct Honest {
  std::vector<std::vector<float>> store;
  ModelContents c;
  void add(const std::string& name, std::vector<int64_t> shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    store.emplace_back(n, 0.01f);
    TensorRecord t;
    t.name = name;
    t.shape = std::move(shape);
    t.data = reinterpret_cast<const uint8_t*>(store.back().data());
    t.nbytes = n * sizeof(float);
    c.tensors.push_back(std::move(t));
  }
  Honest() {
    store.reserve(64);
    const int64_t H = 64, I = 256;
    c.config.vocab_size = 6;
    c.config.hidden_size = H;
    c.config.num_hidden_layers = 1;
    c.config.num_attention_heads = 1;
    c.config.intermediate_size = I;
    c.config.max_position_embeddings = 8;
    c.tokenizer.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"};
    add("bert.embeddings.word_embeddings.weight", {6, H});
    add("bert.embeddings.position_embeddings.weight", {8, H});
    add("bert.embeddings.token_type_embeddings.weight", {2, H});
    add("bert.embeddings.LayerNorm.weight", {H});
    add("bert.embeddings.LayerNorm.bias", {H});
    const std::string p = "bert.encoder.layer.0.";
    for (const char* l : {"attention.self.query", "attention.self.key", "attention.self.value",
                          "attention.output.dense"}) {
      add(p + l + ".weight", {H, H});
      add(p + l + ".bias", {H});
    }
    add(p + "attention.output.LayerNorm.weight", {H});
    add(p + "attention.output.LayerNorm.bias", {H});
    add(p + "intermediate.dense.weight", {I, H});
    add(p + "intermediate.dense.bias", {I});
    add(p + "output.dense.weight", {H, I});
    add(p + "output.dense.bias", {H});
    add(p + "output.LayerNorm.weight", {H});
    add(p + "output.LayerNorm.bias", {H});
    add("bert.pooler.dense.weight", {H, H});
    add("bert.pooler.dense.bias", {H});
  }
};

void expect_load_error(const std::string& path, const std::string& needle) {
  try {
    load_model(path);
    ADD_FAILURE() << "expected bertrt::Error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ModelLoadHostile, TheHonestFileLoads) {
  TempDir dir;
  const Honest h;
  write_model_file(dir.file("ok.brt"), h.c);
  EXPECT_EQ(load_model(dir.file("ok.brt")).model->config().num_hidden_layers, 1);
}

TEST(ModelLoadHostile, HugeLayerCountFailsBeforeAllocating) {
  TempDir dir;
  Honest h;
  h.c.config.num_hidden_layers = 4000;  // under the 4096 limit: only the weights can refute it
  write_model_file(dir.file("layers.brt"), h.c);
  const long before = max_rss_kb();
  expect_load_error(dir.file("layers.brt"),
                    "config num_hidden_layers = 4000, but the weights have 1 layer(s)");
  // The model it claims: 4000 × (4·64² + 2·64·256) floats ≈ 787 MB of weights, as much again for
  // gradients; a 64 MB rise in peak memory is far below that and far above reading the file.
  EXPECT_LT(max_rss_kb() - before, 64 * 1024);
}

TEST(ModelLoadHostile, DimensionsBeyondLimitsOrUnbackedByWeights) {
  // Size arithmetic is the same on every 64-bit target: the native suite checks it, the emulated
  // 32-bit (armhf) suite too.
  if (sizeof(size_t) == 8) BERTRT_SKIP_UNDER_EMULATOR();
  TempDir dir;
  {
    Honest h;
    h.c.config.num_hidden_layers = 100000;
    write_model_file(dir.file("a.brt"), h.c);
    expect_load_error(dir.file("a.brt"),
                      "num_hidden_layers = 100000 exceeds the supported maximum 4096");
  }
  {
    Honest h;
    h.c.config.intermediate_size = 1 << 19;
    write_model_file(dir.file("b.brt"), h.c);
    // 4·64² + 2·64·2^19 + (6 + 8 + 2)·64 weights claimed (python3: 67126272); 55296 stored.
    expect_load_error(dir.file("b.brt"), "needs at least 67126272 weights, the tensors hold 55296");
  }
  {
    Honest h;
    h.c.config.max_position_embeddings = 1 << 20;
    write_model_file(dir.file("c.brt"), h.c);
    expect_load_error(dir.file("c.brt"),
                      "max_position_embeddings 1048576, 1 layers) needs at least");
  }
  {
    Honest h;  // a second layer's name present, its other tensors not: too few tensors for 2 layers
    h.c.config.num_hidden_layers = 2;
    h.add("bert.encoder.layer.1.attention.self.query.weight", {64, 64});
    write_model_file(dir.file("d.brt"), h.c);
    expect_load_error(dir.file("d.brt"),
                      "num_hidden_layers = 2 needs at least 37 tensors, the weights have 24");
  }
}

}  // namespace
}  // namespace bertrt
