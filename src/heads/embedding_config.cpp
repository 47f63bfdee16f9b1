#include "heads/embedding_config.h"

#include <cstdint>
#include <set>

#include "core/error.h"

namespace bertrt {

int PoolingConfig::modes() const {
  return int(cls_token) + int(max_tokens) + int(mean_tokens) + int(mean_sqrt_len_tokens) +
         int(weightedmean_tokens) + int(lasttoken);
}

std::string PoolingConfig::mode_string() const {
  // get_pooling_mode_str's order and names.
  const std::pair<bool, const char*> names[] = {
      {cls_token, "cls"},         {mean_tokens, "mean"},
      {max_tokens, "max"},        {mean_sqrt_len_tokens, "mean_sqrt_len_tokens"},
      {weightedmean_tokens, "weightedmean"}, {lasttoken, "lasttoken"}};
  std::string s;
  for (const auto& [on, name] : names)
    if (on) s += (s.empty() ? "" : "+") + std::string(name);
  return s;
}

bool known_dense_activation(const std::string& name) {
  static const std::set<std::string> known = {
      "torch.nn.modules.activation.Tanh", "torch.nn.modules.linear.Identity",
      "torch.nn.modules.activation.ReLU", "torch.nn.modules.activation.GELU",
      "torch.nn.modules.activation.Sigmoid"};
  return known.count(name) > 0;
}

int EmbeddingConfig::dim(int hidden_size) const {
  return dense.empty() ? pooled_dim(hidden_size) : dense.back().out_features;
}

const std::string* EmbeddingConfig::prompt(const std::string& name) const {
  for (const auto& [n, text] : prompts)
    if (n == name) return &text;
  return nullptr;
}

void EmbeddingConfig::validate(int hidden_size, int max_position_embeddings) const {
  if (pooling.modes() == 0) fail("embedding head: the pooling has no mode (pooling_mode_*)");
  // In 64 bits: a file is opened (and this checked) before its hidden_size meets the config's
  // limits (check_model_file), and 2 modes of a hidden_size of 2^30 overflow an int.
  constexpr int kMaxWidth = 1 << 20;
  const int64_t pooled = int64_t(pooling.modes()) * hidden_size;
  if (pooled > kMaxWidth)
    fail("embedding head: the pooled vector has {} dimensions ({} pooling modes × hidden_size {}), "
         "more than {}", pooled, pooling.modes(), hidden_size, kMaxWidth);
  int width = int(pooled);
  std::set<std::string> modules;
  for (size_t i = 0; i < dense.size(); ++i) {
    const DenseConfig& d = dense[i];
    if (d.path.empty() || !modules.insert(d.path).second)
      fail("embedding head: dense {} needs a path (folder name) of its own, got '{}'", i, d.path);
    if (d.in_features != width)
      fail("embedding head: {} in_features is {}, but the vector before it has {} dimensions",
           d.path, d.in_features, width);
    if (d.out_features < 1 || d.out_features > kMaxWidth)
      fail("embedding head: {} out_features {} is outside [1, {}]", d.path, d.out_features,
           kMaxWidth);
    if (!known_dense_activation(d.activation_function))
      fail("embedding head: {} activation_function '{}' is not one of Tanh, Identity, ReLU, "
           "GELU, Sigmoid (torch.nn.modules.activation.* / torch.nn.modules.linear.Identity)",
           d.path, d.activation_function);
    width = d.out_features;
  }
  if (max_seq_length < 0 || max_seq_length > max_position_embeddings)
    fail("embedding head: max_seq_length {} is outside [0, max_position_embeddings {}]",
         max_seq_length, max_position_embeddings);
  if (max_seq_length == 1)
    fail("embedding head: max_seq_length 1 leaves no room for [CLS] and [SEP]");
  std::set<std::string> names;
  for (const auto& [name, text] : prompts)
    if (!names.insert(name).second) fail("embedding head: prompt '{}' appears twice", name);
  if (!default_prompt_name.empty() && !prompt(default_prompt_name))
    fail("embedding head: default_prompt_name '{}' is not one of the prompts", default_prompt_name);
  static const std::set<std::string> similarities = {"cosine", "dot", "euclidean", "manhattan"};
  if (!similarities.count(similarity_fn_name))
    fail("embedding head: similarity_fn_name '{}' is not cosine, dot, euclidean or manhattan",
         similarity_fn_name);
}

}  // namespace bertrt
