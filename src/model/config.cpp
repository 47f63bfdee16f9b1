#include "model/config.h"

#include "core/error.h"

namespace bertrt {

Gelu BertConfig::gelu() const {
  if (hidden_act == "gelu") return Gelu::kErf;
  if (hidden_act == "gelu_new" || hidden_act == "gelu_tanh" || hidden_act == "gelu_pytorch_tanh")
    return Gelu::kTanh;
  fail("config: hidden_act '{}' is not supported (expected gelu, gelu_new or gelu_pytorch_tanh)",
       hidden_act);
}

void BertConfig::validate() const {
  auto positive = [](const char* field, int v) {
    if (v <= 0) fail("config: {} must be positive, got {}", field, v);
  };
  positive("vocab_size", vocab_size);
  positive("hidden_size", hidden_size);
  positive("num_hidden_layers", num_hidden_layers);
  positive("num_attention_heads", num_attention_heads);
  positive("intermediate_size", intermediate_size);
  positive("max_position_embeddings", max_position_embeddings);
  positive("type_vocab_size", type_vocab_size);
  if (hidden_size % num_attention_heads != 0)
    fail("config: hidden_size {} is not a multiple of num_attention_heads {}", hidden_size,
         num_attention_heads);
  if (pad_token_id < 0 || pad_token_id >= vocab_size)
    fail("config: pad_token_id {} outside [0, vocab_size {})", pad_token_id, vocab_size);
  if (!(layer_norm_eps > 0)) fail("config: layer_norm_eps must be positive");
  (void)gelu();
}

BertConfig preset_config(const std::string& preset, int vocab_size) {
  struct P { const char* name; int layers, hidden; };
  static const P presets[] = {{"tiny", 2, 128},  {"mini", 4, 256}, {"small", 4, 512},
                              {"medium", 8, 512}, {"base", 12, 768}, {"large", 24, 1024}};
  for (const P& p : presets) {
    if (preset != p.name) continue;
    BertConfig c;
    c.vocab_size = vocab_size;
    c.hidden_size = p.hidden;
    c.num_hidden_layers = p.layers;
    c.num_attention_heads = p.hidden / 64;
    c.intermediate_size = 4 * p.hidden;
    c.max_position_embeddings = 512;
    return c;
  }
  fail("--preset '{}' is not one of tiny, mini, small, medium, base, large", preset);
}

}  // namespace bertrt
