#include "io/config_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

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

uint64_t shape_numel_saturating(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) return 0;
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return UINT64_MAX;
  }
  return n;
}

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

  const int64_t H = c.hidden_size, I = c.intermediate_size, L = c.num_hidden_layers;
  auto expect = [&](const std::string& name, std::vector<int64_t> shape, const char* implied_by) {
    const std::vector<int64_t>* s = t.shape_of(name);
    if (!s) fail("{}: tensor '{}' is missing (config {} implies it)", where, name, implied_by);
    if (*s != shape)
      fail("{}: tensor '{}' has shape [{}], but config {} implies [{}]", where, name,
           fmt::join(*s, ", "), implied_by, fmt::join(shape, ", "));
  };
  expect("bert.embeddings.word_embeddings.weight", {c.vocab_size, H}, "vocab_size × hidden_size");
  expect("bert.embeddings.position_embeddings.weight", {c.max_position_embeddings, H},
         "max_position_embeddings × hidden_size");
  expect("bert.embeddings.token_type_embeddings.weight", {c.type_vocab_size, H},
         "type_vocab_size × hidden_size");

  // Layers present, counted up to the first gap: bounded by the tensors the file holds, not by L.
  int64_t present = 0;
  while (present < L && t.shape_of(layer_tensor(present, "attention.self.query.weight"))) ++present;
  if (present < L)
    fail(
        "{}: config num_hidden_layers = {}, but the weights have {} layer(s): tensor '{}' is "
        "missing",
        where, L, present, layer_tensor(present, "attention.self.query.weight"));
  // 16 tensors a layer (q, k, v, attention output, intermediate, output: weight and bias each, two
  // LayerNorms) plus 5 for the embeddings: a count the file must at least hold.
  const uint64_t needed_tensors = 16 * uint64_t(L) + 5;
  if (t.count < needed_tensors)
    fail("{}: config num_hidden_layers = {} needs at least {} tensors, the weights have {}", where,
         L, needed_tensors, t.count);
  expect(layer_tensor(L - 1, "attention.self.query.weight"), {H, H}, "hidden_size");
  expect(layer_tensor(L - 1, "intermediate.dense.weight"), {I, H},
         "intermediate_size × hidden_size");
  expect(layer_tensor(L - 1, "output.dense.weight"), {H, I}, "hidden_size × intermediate_size");

  // The encoder's big matrices alone (4 H×H attention, 2 H×I feed-forward a layer) and the three
  // embedding tables: the limits above keep this inside 64 bits.
  const uint64_t per_layer = 4 * uint64_t(H) * uint64_t(H) + 2 * uint64_t(H) * uint64_t(I);
  const uint64_t needed =
      uint64_t(L) * per_layer +
      (uint64_t(c.vocab_size) + uint64_t(c.max_position_embeddings) + uint64_t(c.type_vocab_size)) *
          uint64_t(H);
  if (t.values < needed)
    fail(
        "{}: config (hidden_size {}, intermediate_size {}, {} layers) needs at least {} weights, "
        "the tensors "
        "hold {}",
        where, H, I, L, needed, t.values);
}

}  // namespace bertrt
