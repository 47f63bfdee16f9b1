// The BERT encoder (BertModel): embeddings → num_hidden_layers encoder layers → pooler
// (tanh(Dense(h[CLS])), paper §3). Shape letters: B batch, T seq_len, C hidden_size,
// NH num_attention_heads, I intermediate_size, N = B·T.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/device_array.h"
#include "model/bert_params.h"
#include "model/embeddings.h"
#include "model/encoder_layer.h"

namespace bertrt {

class BertQuant;

// On the host when the caller hands a batch to BertModel; encoder_forward/backward get the same
// struct pointing into backend memory (model/device_batch.h), with attention_mask unused (the
// additive mask is EncoderActs::mask_add) and token_type_ids always set.
//
// Packed (cu_seqlens set; inference only): B sequences of different lengths one after another,
// with no padding. Sequence b is rows [cu_seqlens[b], cu_seqlens[b+1]) of input_ids and
// token_type_ids [N] (N = cu_seqlens[B]), each row attends within its own sequence, and T is the
// longest sequence. attention_mask must be nullptr. cu_seqlens stays on the host; first_rows
// (cu_seqlens[0..B), the [CLS] rows the pooler reads) is set in backend memory by DeviceBatch.
struct EncoderInputs {
  int B = 0, T = 0;
  const int32_t* input_ids = nullptr;       // [B, T]
  const int32_t* token_type_ids = nullptr;  // [B, T]; nullptr = all 0
  const int32_t* attention_mask = nullptr;  // [B, T] 1 keep / 0 pad; nullptr = all 1
  const int32_t* cu_seqlens = nullptr;      // [B + 1] packed; nullptr = padded [B, T]
  const int32_t* first_rows = nullptr;      // [B] packed, backend memory (DeviceBatch)
  bool packed() const { return cu_seqlens != nullptr; }
  int rows() const { return cu_seqlens ? cu_seqlens[B] : B * T; }  // N
};

// Dropout of training forwards. prob: hidden_dropout_prob, at HF's three sites in the encoder (the
// embeddings' output and each layer's two sublayer outputs) and, as HF's classifier_dropout left
// unset, on the input of the sequence, regression and token classification heads (BertModel).
// attention_probs: attention_probs_dropout_prob, on each layer's attention probabilities
// (BertSelfAttention). backends/dropout_rule.h draws the masks from (seed, step, site), so a
// resumed run draws the same ones. 0: none.
struct Dropout {
  float prob = 0.0f;
  uint64_t seed = 0;  // the run's
  uint64_t step = 0;  // the draw: the trainer numbers (optimizer step, micro-batch) pairs
  float attention_probs = 0.0f;
  bool any() const { return prob > 0.0f || attention_probs > 0.0f; }
  // Site numbers: 0 the embeddings, then two a layer; the head's input and the attention
  // probabilities above any layer's.
  static uint64_t embeddings_site() { return 0; }
  static uint64_t head_site() { return uint64_t(1) << 32; }
  static uint64_t attention_probs_site(int layer) { return (uint64_t(2) << 32) + uint64_t(layer); }
  static uint64_t attention_site(int layer) { return 1 + 2 * uint64_t(layer); }
  static uint64_t ffn_site(int layer) { return 2 + 2 * uint64_t(layer); }
  // LoRA dropout: one site per adapted Linear (LoraLinear k of a layer; the pooler's is layer
  // num_hidden_layers, k 0), as PEFT gives each adapter its own nn.Dropout.
  static uint64_t lora_site(int layer, int k) {
    return (uint64_t(3) << 32) + 8 * uint64_t(layer) + uint64_t(k);
  }
};

// What a training forward keeps and what the backward computes (the trainer's memory options).
struct BackwardPlan {
  int first_layer = 0;     // layers below get no backward and keep no activations (frozen)
  bool embeddings = true;  // run the embeddings backward (needs first_layer == 0)
  bool recompute = false;  // keep only each layer's output; redo the layer's forward in backward
  bool operator==(const BackwardPlan& o) const {
    return first_layer == o.first_layer && embeddings == o.embeddings && recompute == o.recompute;
  }
};

// Activations for one (B, T); allocated once and reused while the shape stays the same. With
// training=false the layers share one set of buffers (only what the next layer reads survives);
// so do the layers below plan.first_layer in training, and, with plan.recompute, the layers above
// share one set of work buffers and keep only their outputs.
class EncoderActs {
 public:
  // Carves the activations out of one block of `be`'s memory.
  void resize(Backend& be, const BertConfig& c, int B, int T, bool training,
              const BackwardPlan& plan = {});
  // Inference on a packed batch (EncoderInputs::cu_seqlens): B sequences in `rows` rows, the
  // longest T; the attention scratch is one sequence's [NH, T, T].
  void resize_packed(Backend& be, const BertConfig& c, int B, int T, int rows);
  int B() const { return B_; }
  int T() const { return T_; }
  int rows() const { return N_; }  // B·T, or the packed batch's rows
  bool training() const { return training_; }
  const BackwardPlan& plan() const { return plan_; }

  EmbeddingActs emb;
  std::vector<LayerActs> layers;
  float* scores = nullptr;       // [B, NH, T, T] scratch ([NH, T, T] packed)
  float* mask_add = nullptr;     // [B, T] 0 or −10000 (google-research/bert modeling.py)
  float* pooled_pre = nullptr;   // [B, C] before tanh
  float* pooled = nullptr;       // [B, C] pooler_output
  const float* hidden = nullptr; // [B, T, C] last_hidden_state (points into a layer's out)
  // Backward: heads accumulate into dhidden / dpooled (zeroed by the forward in training mode).
  float *dhidden = nullptr, *dpooled = nullptr, *dpooled_pre = nullptr, *dnext = nullptr;
  float* demb_sum = nullptr;  // null when the plan has no embeddings backward
  LayerGradScratch scratch{};
  Dropout dropout;  // of the next training forward (and its backward); ignored at inference
  // The model's adapters (r 0: none); set before resize, which carves their buffers.
  LoraRun lora;
  float* pooler_lora_u = nullptr;  // [B, r]

 private:
  int B_ = 0, T_ = 0, N_ = 0;
  bool training_ = false, packed_ = false;
  BackwardPlan plan_;
  size_t C_ = 0, L_ = 0, I_ = 0;
  int lora_r_ = 0;
  bool lora_drop_ = false;
  void allocate(Backend& be, const BertConfig& c, int B, int T, bool training,
                const BackwardPlan& plan, int packed_rows);
  DeviceArray<float> buf_;
};

// Throws bertrt::Error for an input id ≥ vocab_size, a token type ≥ type_vocab_size or
// T > max_position_embeddings (`in` on the host, before it is uploaded).
void check_encoder_inputs(const BertConfig& c, const EncoderInputs& in);
// Runs the encoder and pooler on `in` in backend memory; position_ids [N] too, and a.mask_add
// already holds the additive mask. q: the model's quantization (model/bert_quant.h) or nullptr.
void encoder_forward(Backend& be, const BertConfig& c, const BertParams& w, EncoderActs& a,
                     const EncoderInputs& in, const int32_t* position_ids, BertQuant* q = nullptr);

// Back-propagates a.dhidden and a.dpooled into the gradients dw (accumulating), down to layer
// a.plan().first_layer (and into the embeddings when a.plan().embeddings).
void encoder_backward(Backend& be, const BertConfig& c, const BertParams& dw, EncoderActs& a,
                      const BertParams& w, const EncoderInputs& in, const int32_t* position_ids,
                      BertQuant* q = nullptr);

}  // namespace bertrt
