// Quantization of a whole BertModel: one QuantLinear (quant/quant_linear.h) per nn.Linear —
// query, key, value, attention output, both FFN layers of every layer, the pooler, and every head
// present (cls.predictions.transform.dense, the tied decoder cls.predictions.decoder,
// cls.seq_relationship, classifier, qa_outputs) — plus the embedding tables. LayerNorm, softmax,
// GELU, tanh, the residual adds and the attention matmuls (activation × activation) stay fp32.
//
// The tied MLM decoder is a Linear like the others: its input gets its own observer and its
// weight, the word-embedding table [V, C], is fake-quantized per row (= per output channel). With
// int8 embeddings the lookup quantizes the same rows with the same rule, so the int8 model holds
// ONE int8 word table that serves both the lookup and the decoder.
//
// Embeddings: int8_embeddings fake-quantizes the rows read from all three tables (word, position,
// token type) per row, symmetric int8 (fake_quant.h); otherwise the tables stay fp32 in training
// and in the exported file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "quant/quant_linear.h"

namespace bertrt {

struct QatConfig {
  float observer_momentum = 0.01f;     // --qat-observer-momentum (observer.h)
  int64_t freeze_observers_steps = 0;  // > 0: observers update in the first N training forwards
                                       // only; 0: never frozen
  bool int8_embeddings = true;         // --qat-embeddings int8 | float
};

// Where a Linear lives: HF module name (observer tensors are "<name>.input_observer"), its weight
// and bias tensors, and its size. The tied decoder's weight is the word-embedding table.
struct LinearSite {
  std::string name, weight, bias;
  int out_f = 0, in_f = 0;
};
// Every Linear of a model with these heads, in forward order.
std::vector<LinearSite> linear_sites(const BertConfig& config, const HeadsConfig& heads);

struct LayerQuant {
  QuantLinear *query = nullptr, *key = nullptr, *value = nullptr, *attn_out = nullptr,
              *inter = nullptr, *out = nullptr;
};

// One embedding table under quantization.
struct EmbeddingTableQuant {
  Int8Weight w8;                   // kInt8: the table, per-row symmetric int8 (host)
  Int8WeightMirror dev;            // ... as the backend reads it
  DeviceArray<float> rows, scale;  // kFakeQuant: the gathered rows [N, C] after fake-quant
  DeviceArray<uint8_t> mask;       // their STE mask
};

struct EmbeddingQuant {
  QuantMode mode = QuantMode::kFloat;  // kFakeQuant or kInt8 only when `int8`
  bool int8 = false;
  EmbeddingTableQuant word, pos, type;
  DeviceArray<float> dscratch;  // backward: the masked gradient of one table's rows [N, C]
  bool active() const {
    return int8 && (mode == QuantMode::kFakeQuant || mode == QuantMode::kInt8);
  }
};

class BertQuant {
 public:
  BertQuant(const BertConfig& config, const HeadsConfig& heads, QuantMode mode,
            const QatConfig& qat);

  QuantMode mode() const { return mode_; }
  const QatConfig& qat() const { return qat_; }
  // Switches every Linear and the embeddings (kInt8 is set by the export / the loader instead).
  void set_mode(QuantMode mode);
  // After a change of heads: adds the new Linears, drops the removed ones, keeps the rest.
  void bind(const BertConfig& config, const HeadsConfig& heads);
  // Before each forward: whether this forward's inputs update the observers (training forwards
  // of QAT until the freeze step; every calibration forward), and the freeze itself.
  void begin_forward(bool training);
  void set_observers_frozen(bool frozen);
  bool observers_frozen() const;
  int64_t training_forwards() const { return training_forwards_; }

  std::map<std::string, QuantLinear>& linears() { return linears_; }
  const std::map<std::string, QuantLinear>& linears() const { return linears_; }
  QuantLinear& at(const std::string& name);  // throws bertrt::Error naming an unknown Linear

  // Bound views (nullptr for a head the model does not carry).
  std::vector<LayerQuant> layers;
  QuantLinear *pooler = nullptr, *mlm_dense = nullptr, *mlm_decoder = nullptr, *nsp = nullptr,
              *cls = nullptr, *qa = nullptr;
  EmbeddingQuant emb;
  // Adapters over an int8 base: the dequantized weight of one Linear at a time (lora_int8.h).
  Int8BackwardScratch backward_scratch;

 private:
  QuantMode mode_;
  QatConfig qat_;
  std::map<std::string, QuantLinear> linears_;  // by HF module name; nodes never move
  int64_t training_forwards_ = 0;
};

}  // namespace bertrt
