// BertModel::init_weights follows Hugging Face's _init_weights with the config's
// initializer_range (bertrt init --initializer-range): matrices and embeddings ~ N(0, range²),
// biases 0, LayerNorm 1/0, the [PAD] row 0.
#include <gtest/gtest.h>

#include <cmath>

#include "model/bert_model.h"

namespace bertrt {
namespace {

TEST(InitWeights, FollowsInitializerRange) {
  for (float range : {0.02f, 0.05f}) {
    BertConfig c;
    c.vocab_size = 3001;
    c.hidden_size = 64;
    c.num_hidden_layers = 1;
    c.num_attention_heads = 2;
    c.intermediate_size = 96;
    c.max_position_embeddings = 40;
    c.pad_token_id = 7;
    c.initializer_range = range;
    HeadsConfig heads;
    heads.mlm = heads.nsp = true;
    BertModel m(c, heads);
    m.init_weights(1);
    for (const ParamInfo& p : m.layout().params()) {
      const float* x = m.params() + p.offset;
      const bool ln = p.name.find("LayerNorm") != std::string::npos;
      const bool bias = p.name.size() > 5 && p.name.compare(p.name.size() - 5, 5, ".bias") == 0;
      if (ln || bias) {
        const float want = ln && !bias ? 1.0f : 0.0f;
        for (size_t i = 0; i < p.numel; ++i) ASSERT_EQ(x[i], want) << p.name << "[" << i << "]";
        continue;
      }
      const bool words = p.name == "bert.embeddings.word_embeddings.weight";
      double s2 = 0;
      size_t n = 0;
      for (size_t i = 0; i < p.numel; ++i) {
        if (words && i / c.hidden_size == size_t(c.pad_token_id)) {
          ASSERT_EQ(x[i], 0.0f) << "[PAD] row";
          continue;
        }
        s2 += double(x[i]) * x[i];
        ++n;
      }
      // The sample std of n normal draws has relative standard error 1/sqrt(2n); 6 of them.
      const double std_dev = std::sqrt(s2 / n), tol = 6.0 / std::sqrt(2.0 * n);
      EXPECT_NEAR(std_dev / range, 1.0, tol) << p.name << " (" << n << " values)";
    }
  }
}

}  // namespace
}  // namespace bertrt
