#include "io/config_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "io/model_file.h"
#include "model/params.h"

namespace bertrt {

namespace {

void limit(const std::string& where, const char* field, int64_t value, int64_t max) {
  if (value > max)
    fail("{}: config {} = {} exceeds the supported maximum {} (corrupted or hostile config?)",
         where, field, value, max);
}

std::string layer_tensor(int64_t layer, const char* rest) {
  return fmt::format("bert.encoder.layer.{}.{}", layer, rest);
}

}  // namespace

void check_config_against_tensors(const BertConfig& c, const TensorsPresent& t,
                                  const std::string& where, const ConfigLimits& limits) {
  try {
    c.validate();
  } catch (const Error& e) {
    fail("{}: {}", where, e.what());
  }
  limit(where, "vocab_size", c.vocab_size, limits.max_vocab_size);
  limit(where, "hidden_size", c.hidden_size, limits.max_hidden_size);
  limit(where, "num_hidden_layers", c.num_hidden_layers, limits.max_layers);
  limit(where, "intermediate_size", c.intermediate_size, limits.max_intermediate_size);
  limit(where, "max_position_embeddings", c.max_position_embeddings,
        limits.max_position_embeddings);
  limit(where, "type_vocab_size", c.type_vocab_size, limits.max_type_vocab_size);

  // Layers present, counted up to the first gap: bounded by the tensors the file holds, not by L.
  const int64_t L = c.num_hidden_layers;
  int64_t present = 0;
  while (present < L && t.shape_of(layer_tensor(present, "attention.self.query.weight"))) ++present;
  if (present < L)
    fail("{}: config num_hidden_layers = {}, but the weights have {} layer(s): tensor '{}' is "
         "missing",
         where, L, present, layer_tensor(present, "attention.self.query.weight"));
  // 16 tensors a layer (q, k, v, attention output, intermediate, output: weight and bias each, two
  // LayerNorms) plus 5 for the embeddings: a count the weights must at least hold.
  const uint64_t needed_tensors = 16 * uint64_t(L) + 5;
  if (t.count < needed_tensors)
    fail("{}: config num_hidden_layers = {} needs at least {} tensors, the weights have {}", where,
         L, needed_tensors, t.count);
}

void check_config_against_values(const BertConfig& c, uint64_t values, const std::string& where) {
  // The encoder's big matrices alone (4 H×H attention, 2 H×I feed-forward a layer) and the three
  // embedding tables; ConfigLimits keeps this inside 64 bits.
  const uint64_t H = uint64_t(c.hidden_size), I = uint64_t(c.intermediate_size);
  const uint64_t per_layer = 4 * H * H + 2 * H * I;
  const uint64_t needed =
      uint64_t(c.num_hidden_layers) * per_layer +
      (uint64_t(c.vocab_size) + uint64_t(c.max_position_embeddings) + uint64_t(c.type_vocab_size)) *
          H;
  if (values < needed)
    fail("{}: config (vocab_size {}, hidden_size {}, intermediate_size {}, "
         "max_position_embeddings {}, {} layers) needs at least {} weights, the tensors hold {}",
         where, c.vocab_size, H, I, c.max_position_embeddings, c.num_hidden_layers, needed, values);
}

void check_model_file(const ModelFile& file) {
  const ModelContents& c = file.contents();
  const std::string& path = file.path();
  if (int64_t(c.tokenizer.vocab.size()) > c.config.vocab_size)
    fail("{}: tokenizer vocab has {} tokens but config.vocab_size is only {}", path,
         c.tokenizer.vocab.size(), c.config.vocab_size);
  TensorsPresent present;
  uint64_t values = 0;
  for (const TensorRecord& t : c.tensors) values += static_cast<uint64_t>(t.numel());  // disjoint
  present.count = c.tensors.size();
  present.shape_of = [&](const std::string& name) -> const std::vector<int64_t>* {
    const TensorRecord* t = file.find(name);
    return t ? &t->shape : nullptr;
  };
  check_config_against_tensors(c.config, present, path);
  check_config_against_values(c.config, values, path);
  const ParamLayout layout = bert_param_layout(c.config, c.heads);
  for (const ParamInfo& p : layout.params()) {
    const TensorRecord* t = file.find(p.name);
    if (!t) fail("{}: tensor '{}' is missing (the config and heads need it)", path, p.name);
    if (t->shape != p.shape)
      fail("{}: tensor '{}' has shape [{}], expected [{}]", path, p.name,
           fmt::join(t->shape, ", "), fmt::join(p.shape, ", "));
  }
}

}  // namespace bertrt
