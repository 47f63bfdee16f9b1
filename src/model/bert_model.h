// BERT with its heads: the parameters (one flat buffer), their gradients, and the activations of
// the last forward. Shape letters as in encoder.h; P = number of masked positions in a batch.
//
// Memory: parameters and gradients are created on the host (initialisation, loading) and used by
// the backend a forward runs on: in place on the cpu backends, moved into its memory on others
// (backends/device_array.h HostDeviceBuffer); params()/grads() bring them back for the host.
// Activations, the uploaded batch and the heads' outputs live in that backend's memory. A forward
// ends with ONE sync, after which its losses, counts and the fine-tuning head's logits are on the
// host; the bigger outputs (hidden states, MLM logits) are downloaded only when asked for.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/device_array.h"
#include "heads/classifier_head.h"
#include "heads/mlm_head.h"
#include "heads/span_head.h"
#include "model/bert_quant.h"
#include "model/device_batch.h"
#include "model/encoder.h"
#include "model/lora_adapter.h"
#include "model/targets.h"

namespace bertrt {

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
  // Where the model came from (its file), for errors about its outputs; empty: not said.
  void set_source(std::string source) { source_ = std::move(source); }
  const std::string& source() const { return source_; }
  const HeadsConfig& heads() const { return heads_; }
  const ParamLayout& layout() const { return layout_; }
  // The parameters on the host (brought back from the backend if they moved there).
  float* params() { return params_.host(); }
  const float* params() const { return params_.host(); }
  // The parameters as ops on `be` read them (moved there if needed).
  float* params(Backend& be);
  float* grads();  // on the host; allocated on first use
  float* grads(Backend& be);
  void zero_grad();             // on the host
  void zero_grad(Backend& be);  // an op on `be`
  size_t num_params() const;  // real parameters (without alignment padding)

  // Memory of the parameters (io/model_io.cpp load_model; docs/explanation/performance.md, "Memory
  // and cold start"). In place: params() becomes `base` (layout().total() floats, 64-byte aligned, e.g. a
  // copy-on-write mapping of the model file) for as long as the model lives, `owner` keeping it
  // valid; nothing is copied, and training writes private copies of the pages it changes.
  void use_params_in_place(float* base, std::shared_ptr<const void> owner);
  bool params_in_place() const { return params_.borrowed(); }
  // An int8 model loaded from its file holds no fp32 copy of the weights it runs in int8 (their
  // slots in params() read 0 and take no memory): `names` are those weights. holds_fp32(name) is
  // false for them; disable_quantization() dequantizes them back first.
  void set_int8_only(std::vector<std::string> names);
  bool holds_fp32(const std::string& name) const;

  // Hugging Face BertPreTrainedModel._init_weights: Linear/Embedding weights ~ N(0, r²) with
  // r = config().initializer_range (0.02 by default), biases 0, LayerNorm weight 1 / bias 0, the
  // [PAD] embedding row 0.
  void init_weights(uint64_t seed);
  // Switches to `heads` (e.g. from pre-training to any fine-tuning head, or between fine-tuning
  // heads): the encoder and the MLM/NSP heads are kept when present in both, the fine-tuning head
  // (classifier.*, qa_outputs.*) only when its kind and shape are unchanged; new parameters are
  // initialised as in init_weights, dropped heads are removed. Throws bertrt::Error when
  // heads.validate() fails.
  void set_heads(const HeadsConfig& heads, uint64_t seed);
  // The same on an int8 model that adapters will train over (model/lora_int8.h): `heads` is one
  // task head (no MLM, NSP or embedding head), and it runs in fp32 (a kept int8 head is
  // dequantized); the base stays int8. Throws bertrt::Error for another model or other heads.
  void set_heads_over_int8(const HeadsConfig& heads, uint64_t seed);

  // Runs the encoder and the heads: MLM only with positions, the others always (their loss only
  // with targets). training=true keeps what backward() needs. A packed batch (encoder.h) runs
  // inference only, without targets, and not with a token classification or QA head; its
  // outputs equal the padded batch's up to float rounding.
  ForwardResult forward(Backend& be, const EncoderInputs& in, const Targets& t, bool training);
  // After forward(training=true): accumulates ∂loss/∂params into grads().
  void backward(Backend& be);
  // The same for a loss computed outside the model from last_hidden_state (a sentence-embedding
  // loss, train/embedding_loss.h): dhidden [B, T, C] on the host is ∂loss/∂last_hidden_state.
  // Throws bertrt::Error when a head's loss ran in the forward (its gradient would be lost).
  void backward_from_hidden(Backend& be, const float* dhidden);
  // The same without the host: ops on `be` accumulate ∂loss/∂last_hidden_state into
  // hidden_gradient(be) [B, T, C] (zeroed by the training forward), then this runs the backward.
  void backward_from_hidden(Backend& be);
  // Memory options of training (encoder.h BackwardPlan): frozen bottom layers get no backward and
  // keep no activations; recompute keeps only each layer's output. Gradients of the parameters
  // the plan skips are left untouched (zero after zero_grad). Throws bertrt::Error when
  // plan.embeddings is set with plan.first_layer > 0 or first_layer is not in [0, layers].
  void set_backward_plan(const BackwardPlan& plan);
  const BackwardPlan& backward_plan() const { return plan_; }
  // Hidden dropout of the training forwards that follow (encoder.h Dropout; prob 0 = none, the
  // default). The trainer sets the step before each forward.
  void set_dropout(const Dropout& d) { acts_.dropout = d; }
  const Dropout& dropout() const { return acts_.dropout; }

  // Outputs of the last forward, on the host (the first three downloaded on first call).
  // last_hidden_state: [B, T, C]; after a packed forward (EncoderInputs::cu_seqlens) [N, C], the
  // sequences' rows one after another.
  const float* last_hidden_state() const;                                            // [B, T, C]
  // The same in `be`'s memory, where ops read it (no download); its gradient buffer after a
  // training forward. Both throw bertrt::Error when the last forward ran on another backend.
  const float* last_hidden_state(Backend& be) const;
  float* hidden_gradient(Backend& be);
  const float* pooler_output() const;                                                // [B, C]
  // [P, V]; after a training forward with MLM labels it throws: the head's cross-entropy wrote
  // the logits' gradient over them (one buffer, mlm_head.h).
  const float* prediction_logits() const;
  const std::vector<float>& seq_relationship_logits() const { return nsp_logits_; }  // [B, 2]
  // Fine-tuning head: [B, K] sequence classification, [B] regression, [B·T, K] token
  // classification; empty for question answering.
  const std::vector<float>& logits() const { return logits_; }
  const std::vector<float>& start_logits() const { return start_logits_; }  // [B, T] QA
  const std::vector<float>& end_logits() const { return end_logits_; }      // [B, T] QA
  // MLM logits for every position [B·T, V] (fill-mask / forward) on the host; runs the MLM head
  // on all rows.
  const float* mlm_logits_all(Backend& be);

  // --- LoRA adapters (model/lora.h; docs/explanation/lora.md) ------------------------------------
  // Adds an adapter to every Linear `lora` selects: parameters <module>.lora_A.weight, initialised
  // as PEFT does (Kaiming-uniform, bound 1/√in_features, from `seed`) and <module>.lora_B.weight
  // (zeros), so the model's outputs are unchanged until they are trained. From then on the base is
  // frozen: backward() computes no gradient of the encoder's, embeddings' or pooler's weights,
  // only the adapters' and the task head's (and dX through every frozen Linear). Throws
  // bertrt::Error (prefixed by `where`) for a bad config (lora_sites), an adapter already
  // attached, a model in QAT or calibration, or heads other than a task head or a
  // sentence-embedding head without Dense modules. Over an int8 model (model/lora_int8.h) the base
  // stays int8: its Linears run the int8 kernels forward and give dX only backward; the task head
  // becomes fp32 (set_heads then takes task heads, as on a float model).
  void attach_lora(const LoraConfig& lora, uint64_t seed, const std::string& where = "LoRA");
  const LoraConfig* lora() const { return lora_ ? &*lora_ : nullptr; }
  // A tensor of the base (frozen while adapters train): not an adapter's, not the task head's.
  bool is_base_param(const std::string& name) const;
  // W += scaling · B·A for every adapted Linear, then drops the adapters: a plain model with the
  // adapted outputs (bertrt merge). Throws bertrt::Error without adapters.
  void merge_lora();

  // --- Inference adapters over a shared base (model/lora_adapter.h; docs/explanation/lora.md) ---
  // Runs `adapter` from the next forward on: heads() becomes the adapter's head, every Linear it
  // adapts adds its low-rank branch, the base's weights are read where they lie (params(): e.g.
  // the model file's mapping) and the adapter's from its own buffer; nothing is copied, nothing
  // of the base is written. nullptr detaches it: the base's own heads again. Switching costs no
  // copy of any weight. The model keeps a reference to every adapter it has run until it is
  // destroyed: a backend may have packed their weights by address (cpu_backend.h), so no other
  // tensor may take that address while the backend serves this model. Inference only: a training
  // forward, set_heads, attach_lora, QAT and calibration throw while one is set. Throws
  // bertrt::Error when the adapter was made for a base of another config, when the model carries
  // trained adapters (attach_lora) or is in QAT or calibration. Over an int8 base the encoder
  // runs its int8 kernels with the adapters' fp32 updates beside them and the adapter's head runs
  // in fp32 (model/lora_int8.h).
  void set_adapter(std::shared_ptr<const LoraAdapter> adapter);
  const LoraAdapter* adapter() const { return adapter_.get(); }

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
  // Back to plain fp32 (drops observers and int8 weights; an int8 model keeps — or, loaded from
  // its file, first gets back — its dequantized weights, which are exactly the fake-quant weights).
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
  HostDeviceBuffer params_, grads_;
  BertParams w_, dw_;  // bound to where params_ / grads_ are used
  const float *w_at_ = nullptr, *dw_at_ = nullptr;
  Backend* be_ = nullptr;  // the backend of the last forward: where its outputs live
  EncoderActs acts_;
  BackwardPlan plan_;
  DeviceBatch batch_;  // the last forward's batch (backend and host copies)
  MlmActs mlm_;
  ClassifierActs nsp_, cls_;
  SpanActs span_;
  // The fine-tuning head's input after dropout (training with dropout only; head_dropped_) and
  // its gradient, which backward masks again and adds to dpooled / dhidden.
  DeviceArray<float> head_in_, dhead_in_;
  bool head_dropped_ = false;
  bool ran_mlm_ = false, ran_nsp_ = false, ran_task_ = false;  // backward has gradients to run

  // What the heads leave for the host: loss sums and argmax rows (readout.h layout in .cpp).
  DeviceArray<double> loss_dev_;
  DeviceArray<int32_t> argmax_dev_;
  std::vector<float> nsp_logits_, logits_, start_logits_, end_logits_;
  std::string source_;
  mutable std::vector<float> hidden_host_, pooled_host_, prediction_host_;
  mutable bool hidden_fresh_ = false, pooled_fresh_ = false, prediction_fresh_ = false;
  bool prediction_overwritten_ = false;  // a training forward's MLM gradient holds the buffer
  DeviceArray<int32_t> all_positions_;

  std::unique_ptr<BertQuant> quant_;  // nullptr: fp32
  std::optional<LoraConfig> lora_;    // attached adapters (their tensors end the layout)
  // The inference adapter (set_adapter), its weights as `be_` reads them, the base's own heads
  // while it is set, and every adapter run so far (kept alive: set_adapter).
  std::shared_ptr<const LoraAdapter> adapter_;
  ConstMirror<float> adapter_dev_;
  const float* adapter_at_ = nullptr;
  HeadsConfig base_heads_;
  std::vector<std::shared_ptr<const LoraAdapter>> adapters_run_;

  // New layout for `heads` and lora_, keeping the tensors present in both (set_heads).
  void relayout(const HeadsConfig& heads, uint64_t seed);
  // Adapters over an int8 model (lora_int8.h): the task head's Linear runs and trains in fp32, its
  // int8 weight (if any) dequantized into params().
  void float_task_head();
  std::vector<std::string> int8_only_;  // weights without fp32 values (set_int8_only)

  void bind(Backend& be);  // params (and grads, if any) on `be`, the views rebound
  void task_forward(Backend& be, float loss_weight, HeadReadout out);
  const float* head_input(Backend& be, const float* x, size_t n);
  HeadResult task_result(const double* loss, const int32_t* argmax) const;
  void task_backward(Backend& be);
};

}  // namespace bertrt
