// BERT with its heads: the parameters (one flat buffer), their gradients, and the activations of
// the last forward. Shape letters as in encoder.h; P = number of masked positions in a batch.
#pragma once

#include <cstdint>
#include <memory>

#include "core/buffer.h"
#include "heads/classifier_head.h"
#include "heads/mlm_head.h"
#include "heads/span_head.h"
#include "model/bert_quant.h"
#include "model/encoder.h"

namespace bertrt {

// Labels for the heads that should compute a loss; nullptr entries are skipped (that head then
// produces its logits only). Which fine-tuning field is read depends on heads().kind.
struct Targets {
  const int32_t* mlm_positions = nullptr;  // [P] flat indices b·T + t
  const int32_t* mlm_labels = nullptr;     // [P] original token ids (< 0 ignored)
  int num_masked = 0;                      // P
  const int32_t* nsp_labels = nullptr;     // [B] 0 = real next sentence, 1 = random
  const int32_t* labels = nullptr;         // [B] sequence classification, in [0, K) (< 0 ignored)
  const float* scores = nullptr;           // [B] regression targets (e.g. STS-B similarity)
  const int32_t* token_labels = nullptr;   // [B·T] token classification, −100 (any < 0) ignored
  const int32_t* start_positions = nullptr;  // [B] question answering: token index of the
  const int32_t* end_positions = nullptr;    // [B] answer's first / last piece (see span_head.h)
};

struct ForwardResult {
  double loss = 0;  // Σ of the head losses present (BertForPreTraining: mlm + nsp)
  MlmResult mlm;
  HeadResult nsp;
  HeadResult cls;  // the fine-tuning head, whichever heads().kind is (see head_result.h)
  // The fine-tuning head's outputs, valid until the next forward (nullptr when absent):
  //   sequence classification [B, K]; regression [B] (= [B, 1]); token classification [B·T, K].
  const float* logits = nullptr;
  const float* start_logits = nullptr;  // [B, T] question answering
  const float* end_logits = nullptr;    // [B, T]
};

class BertModel {
 public:
  // Throws bertrt::Error when config.validate() fails.
  BertModel(BertConfig config, HeadsConfig heads);

  const BertConfig& config() const { return config_; }
  const HeadsConfig& heads() const { return heads_; }
  const ParamLayout& layout() const { return layout_; }
  float* params() { return params_.data(); }
  const float* params() const { return params_.data(); }
  float* grads();  // allocated on first use
  void zero_grad();
  size_t num_params() const;  // real parameters (without alignment padding)

  // Hugging Face BertPreTrainedModel._init_weights: Linear/Embedding weights ~ N(0, 0.02²),
  // biases 0, LayerNorm weight 1 / bias 0, the [PAD] embedding row 0.
  void init_weights(uint64_t seed);
  // Switches to `heads` (e.g. from pre-training to any fine-tuning head, or between fine-tuning
  // heads): the encoder and the MLM/NSP heads are kept when present in both, the fine-tuning head
  // (classifier.*, qa_outputs.*) only when its kind and shape are unchanged; new parameters are
  // initialised as in init_weights, dropped heads are removed. Throws bertrt::Error when
  // heads.validate() fails.
  void set_heads(const HeadsConfig& heads, uint64_t seed);

  // Runs the encoder and the heads: MLM only with positions, the others always (their loss only
  // with targets). training=true keeps what backward() needs.
  ForwardResult forward(Backend& be, const EncoderInputs& in, const Targets& t, bool training);
  // After forward(training=true): accumulates ∂loss/∂params into grads().
  void backward(Backend& be);
  // Memory options of training (encoder.h BackwardPlan): frozen bottom layers get no backward and
  // keep no activations; recompute keeps only each layer's output. Gradients of the parameters
  // the plan skips are left untouched (zero after zero_grad). Throws bertrt::Error when
  // plan.embeddings is set with plan.first_layer > 0 or first_layer is not in [0, layers].
  void set_backward_plan(const BackwardPlan& plan);
  const BackwardPlan& backward_plan() const { return plan_; }

  // Outputs of the last forward.
  const float* last_hidden_state() const { return acts_.hidden; }  // [B, T, C]
  const float* pooler_output() const { return acts_.pooled; }      // [B, C]
  const float* prediction_logits() const { return mlm_.logits; }   // [P, V]
  const std::vector<float>& seq_relationship_logits() const { return nsp_.logits; }  // [B, 2]
  // Fine-tuning head: [B, K] sequence classification, [B] regression, [B·T, K] token
  // classification; empty for question answering.
  const std::vector<float>& logits() const { return cls_.logits; }
  const std::vector<float>& start_logits() const { return span_.start; }  // [B, T] QA
  const std::vector<float>& end_logits() const { return span_.end; }      // [B, T] QA
  // MLM logits for every position [B·T, V] (fill-mask / forward); runs the MLM head on all rows.
  const float* mlm_logits_all(Backend& be);

  // --- Quantization (model/bert_quant.h; README "Quantization-aware training and int8") ---------
  // QAT: every Linear fake-quantizes its input (own moving-average observer) and its weight (per
  // output channel) from the next forward on; a QAT model already in fake-quant mode keeps its
  // observer ranges. Throws bertrt::Error for an int8 model or an invalid config.
  void enable_qat(const QatConfig& config);
  // Post-training quantization: fp32 forwards that record each Linear's input min/max, then
  // finish_calibration() freezes those ranges (fake-quant mode, ready for convert_to_int8()).
  void begin_calibration(bool int8_embeddings);
  void finish_calibration();
  // Fake-quant → int8 in memory: int8 weights (the scales QAT used) and the frozen activation
  // qparams; from then on forward() runs the int8 kernels and training throws. save_model() of an
  // int8 model writes i8 tensors.
  void convert_to_int8();
  // Back to plain fp32 (drops observers and int8 weights; an int8 model keeps its dequantized
  // weights, which are exactly the fake-quant weights).
  void disable_quantization();
  // Replaces the quantization state (the loader of quantized files).
  void set_quant(std::unique_ptr<BertQuant> quant);
  QuantMode quant_mode() const { return quant_ ? quant_->mode() : QuantMode::kFloat; }
  BertQuant* quant() { return quant_.get(); }
  const BertQuant* quant() const { return quant_.get(); }

 private:
  BertConfig config_;
  HeadsConfig heads_;
  ParamLayout layout_;
  FloatBuffer params_, grads_;
  BertParams w_, dw_;
  EncoderActs acts_;
  BackwardPlan plan_;
  MlmActs mlm_;
  ClassifierActs nsp_, cls_;
  SpanActs span_;
  EncoderInputs in_;
  Targets targets_;
  bool ran_mlm_ = false, ran_nsp_ = false, ran_task_ = false;  // backward has gradients to run

  std::unique_ptr<BertQuant> quant_;  // nullptr: fp32

  HeadResult task_forward(Backend& be, const Targets& t, float loss_weight, ForwardResult& r);
  void task_backward(Backend& be);
  std::vector<int32_t> all_positions_;
};

}  // namespace bertrt
