// A config checked against the tensors a file actually holds, before anything proportional to the
// config's dimensions is allocated. A hostile config.json or .brt (num_hidden_layers 100000,
// vocab_size 2^30 beside tiny weights) must fail at once with small memory, not after building a
// parameter layout or a model of the size the config claims.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/config.h"

namespace bertrt {

// Upper bounds far above any released BERT (BERT-large: 24 layers, hidden 1024, vocab 30522,
// 512 positions; the largest multilingual vocabularies are ~250k) and below what overflows the
// int arithmetic of shapes.
struct ConfigLimits {
  int64_t max_vocab_size = int64_t(1) << 24;
  int64_t max_hidden_size = int64_t(1) << 16;
  int64_t max_layers = 4096;
  int64_t max_intermediate_size = int64_t(1) << 20;
  int64_t max_position_embeddings = int64_t(1) << 20;
  int64_t max_type_vocab_size = int64_t(1) << 16;
};

// What the weights hold, looked up by Hugging Face state-dict name (PyTorch layout: nn.Linear
// weights [out, in]).
struct TensorsPresent {
  // The tensor's shape, or nullptr when the weights have no tensor of that name.
  std::function<const std::vector<int64_t>*(const std::string& hf_name)> shape_of;
  uint64_t count = 0;   // number of tensors
  uint64_t values = 0;  // total element count over all tensors
};

// Element count of `shape`, saturating at UINT64_MAX (negative dimensions count as 0): for summing
// sizes that a hostile header may have made absurd.
uint64_t shape_numel_saturating(const std::vector<int64_t>& shape);

// Throws bertrt::Error prefixed by `where` when a dimension exceeds `limits` or disagrees with the
// weights: the embedding tables must be [vocab_size, H], [max_position_embeddings, H],
// [type_vocab_size, H]; every layer index below num_hidden_layers must be backed by tensors, the
// last layer's shapes must be those of hidden_size / intermediate_size, and the encoder's
// parameter count must not exceed the values present. Costs O(layers present), allocates nothing
// proportional to the config.
void check_config_against_tensors(const BertConfig& config, const TensorsPresent& tensors,
                                  const std::string& where, const ConfigLimits& limits = {});

}  // namespace bertrt
