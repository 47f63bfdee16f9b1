// The embedding head of a sentence-transformers model: the modules after the Transformer in
// modules.json (Pooling, then any Dense layers, then an optional Normalize), with the settings of
// sentence_bert_config.json and config_sentence_transformers.json that change what encode()
// returns. Field names follow those files.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace bertrt {

// 1_Pooling/config.json. Several modes at once are concatenated in this order (Pooling.forward):
// cls, max, mean, mean_sqrt_len, weightedmean, lasttoken.
struct PoolingConfig {
  bool cls_token = false;
  bool max_tokens = false;
  bool mean_tokens = false;
  bool mean_sqrt_len_tokens = false;
  bool weightedmean_tokens = false;
  bool lasttoken = false;
  // false: the prompt's tokens ([CLS] included) do not enter the pooling.
  bool include_prompt = true;

  int modes() const;
  // "cls+mean", as sentence-transformers' get_pooling_mode_str names the modes.
  std::string mode_string() const;
};

// One Dense module (sentence_transformers.models.Dense): y = activation(W x + b), its weights
// "<path>.linear.weight" [out_features, in_features] and "<path>.linear.bias" [out_features].
struct DenseConfig {
  std::string path;  // its folder (modules.json "path"), where it came from and goes back to: "2_Dense"
  int in_features = 0;
  int out_features = 0;
  bool bias = true;
  // The torch class as the config names it: torch.nn.modules.activation.Tanh (Dense's default),
  // torch.nn.modules.linear.Identity, torch.nn.modules.activation.ReLU, torch.nn.modules.activation.GELU,
  // torch.nn.modules.activation.Sigmoid.
  std::string activation_function = "torch.nn.modules.activation.Tanh";
};

struct EmbeddingConfig {
  PoolingConfig pooling;
  std::vector<DenseConfig> dense;
  bool normalize = false;  // a Normalize module ends the pipeline
  int max_seq_length = 0;  // sentence_bert_config.json; 0: max_position_embeddings
  bool do_lower_case = false;  // sentence_bert_config.json: lower-case the text before tokenizing
  std::vector<std::pair<std::string, std::string>> prompts;  // name → text put before the input
  std::string default_prompt_name;  // empty: none
  std::string similarity_fn_name = "cosine";  // "cosine", "dot", "euclidean", "manhattan"

  // The width of the pooled vector and of the embedding (the last Dense's out_features, else the
  // pooled width); for a validated head (validate bounds modes × hidden_size).
  int pooled_dim(int hidden_size) const { return pooling.modes() * hidden_size; }
  int dim(int hidden_size) const;
  // nullptr when no prompt has that name.
  const std::string* prompt(const std::string& name) const;
  // Throws bertrt::Error naming the field: no pooling mode, a pooled width (modes × hidden_size)
  // or an out_features above 2^20, a Dense whose in_features is not the width before it, an
  // unknown activation, a prompt name repeated, a default_prompt_name without its prompt, a
  // max_seq_length outside [0, max_position_embeddings].
  void validate(int hidden_size, int max_position_embeddings) const;
};

// The activation_function names a Dense may carry (DenseConfig).
bool known_dense_activation(const std::string& name);

}  // namespace bertrt
