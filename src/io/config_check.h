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

class ModelFile;

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

// What the weights hold, looked up by Hugging Face state-dict name.
struct TensorsPresent {
  // The tensor's shape, or nullptr when the weights have no tensor of that name.
  std::function<const std::vector<int64_t>*(const std::string& hf_name)> shape_of;
  uint64_t count = 0;  // number of tensors
};

// Throws bertrt::Error prefixed by `where` when a dimension exceeds `limits` or num_hidden_layers
// is not backed by the weights (every layer index below it must have its query weight, and the
// weights must hold at least 16 tensors a layer). Costs O(layers present) and allocates nothing
// proportional to the config, so a parameter layout (one entry per tensor of every layer) built
// after it is bounded by the weights. Shapes are left to the callers, whose messages name the
// source tensor.
void check_config_against_tensors(const BertConfig& config, const TensorsPresent& tensors,
                                  const std::string& where, const ConfigLimits& limits = {});

// Throws bertrt::Error prefixed by `where` when the weights hold fewer values than the config's
// embedding tables and encoder matrices need: run before allocating a model of the config's size
// from `values` stored weights.
void check_config_against_values(const BertConfig& config, uint64_t values,
                                 const std::string& where);

// Everything load_model checks before it allocates a model of the file's config: the config
// against the tensors present (names, count, limits) and against the values they hold (the
// segments are disjoint, so these are bytes of the file), and the shape of every tensor of the
// config's parameter layout. Throws bertrt::Error naming the file and the tensor.
void check_model_file(const ModelFile& file);

}  // namespace bertrt
