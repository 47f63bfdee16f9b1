#include "model/bert_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "backends/dropout_rule.h"
#include "core/error.h"
#include "core/random.h"
#include "heads/regression_head.h"
#include "model/lora.h"

namespace bertrt {

BertModel::BertModel(BertConfig config, HeadsConfig heads)
    : config_(std::move(config)), heads_(std::move(heads)) {
  config_.validate();
  heads_.validate();
  if (heads_.embedding)
    heads_.embedding->validate(config_.hidden_size, config_.max_position_embeddings);
  heads_.kind = heads_.resolved_kind();
  layout_ = bert_param_layout(config_, heads_);
  params_.assign(layout_.total(), 0.0f);
}

float* BertModel::params(Backend& be) {
  bind(be);
  return params_.on(be);
}

float* BertModel::grads() {
  if (grads_.size() != layout_.total()) grads_.assign(layout_.total(), 0.0f);
  return grads_.host();
}

float* BertModel::grads(Backend& be) {
  if (grads_.size() != layout_.total()) grads_.assign(layout_.total(), 0.0f);
  bind(be);
  return grads_.on(be);
}

void BertModel::zero_grad() {
  if (!grads_.empty()) std::fill_n(grads_.host(), grads_.size(), 0.0f);
}

void BertModel::zero_grad(Backend& be) { be.fill(grads(be), 0.0f, layout_.total()); }

// The gradient views of a model whose base is frozen (adapters attached): every tensor of the
// encoder, embeddings and pooler is nullptr, so the backward computes only dX through them (and
// the adapters' and the head's gradients).
static BertParams adapter_grads(BertParams g) {
  g.word_emb = g.pos_emb = g.type_emb = g.emb_ln_w = g.emb_ln_b = nullptr;
  for (LayerParams& L : g.layers) {
    for (float** p : {&L.query_w, &L.query_b, &L.key_w, &L.key_b, &L.value_w, &L.value_b,
                      &L.attn_out_w, &L.attn_out_b, &L.attn_ln_w, &L.attn_ln_b, &L.inter_w,
                      &L.inter_b, &L.out_w, &L.out_b, &L.out_ln_w, &L.out_ln_b})
      *p = nullptr;
  }
  g.pooler_w = g.pooler_b = nullptr;
  return g;
}

void BertModel::bind(Backend& be) {
  const float* p = params_.on(be);
  const float* a =
      adapter_ ? adapter_dev_.on(be, adapter_->weights(), adapter_->layout().total()) : nullptr;
  if (p != w_at_ || a != adapter_at_) {
    w_ = bind_params(layout_, config_, const_cast<float*>(p)), w_at_ = p, adapter_at_ = a;
    if (adapter_) w_ = bind_adapter(w_, adapter_->layout(), config_, const_cast<float*>(a));
  }
  if (grads_.empty()) return;
  const float* g = grads_.on(be);
  if (g != dw_at_) {
    dw_ = bind_params(layout_, config_, const_cast<float*>(g)), dw_at_ = g;
    if (lora_) dw_ = adapter_grads(dw_);
  }
}

void BertModel::use_params_in_place(float* base, std::shared_ptr<const void> owner) {
  params_.borrow(base, layout_.total(), std::move(owner));
  w_at_ = nullptr;
}

void BertModel::set_int8_only(std::vector<std::string> names) {
  for (const std::string& n : names) layout_.at(n);  // a name outside the layout is a bug
  int8_only_ = std::move(names);
}

bool BertModel::holds_fp32(const std::string& name) const {
  return std::find(int8_only_.begin(), int8_only_.end(), name) == int8_only_.end();
}

size_t BertModel::num_params() const {
  size_t n = 0;
  for (const ParamInfo& p : layout_.params()) n += p.numel;
  return n;
}

static bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One parameter per HF _init_weights rule; the name decides which.
static void init_param(const ParamInfo& p, float* x, const BertConfig& c, std::mt19937_64& rng) {
  const bool layernorm = p.name.find("LayerNorm") != std::string::npos;
  if (ends_with(p.name, ".lora_B.weight")) {
    std::fill(x, x + p.numel, 0.0f);  // PEFT: B = 0, so an attached adapter changes nothing
  } else if (ends_with(p.name, ".lora_A.weight")) {
    // PEFT reset_lora_parameters: kaiming_uniform_(a=√5) over fan_in = in_features, which is
    // U(−1/√in, 1/√in).
    const double bound = 1.0 / std::sqrt(double(p.shape[1]));
    for (size_t i = 0; i < p.numel; ++i) x[i] = float((2.0 * random_unit(rng) - 1.0) * bound);
  } else if (layernorm) {
    std::fill(x, x + p.numel, ends_with(p.name, ".weight") ? 1.0f : 0.0f);
  } else if (ends_with(p.name, ".bias")) {
    std::fill(x, x + p.numel, 0.0f);
  } else {
    for (size_t i = 0; i < p.numel; ++i) x[i] = float(random_normal(rng) * c.initializer_range);
    if (p.name == "bert.embeddings.word_embeddings.weight")  // nn.Embedding(padding_idx=pad)
      std::fill(x + size_t(c.pad_token_id) * c.hidden_size,
                x + size_t(c.pad_token_id + 1) * c.hidden_size, 0.0f);
  }
}

void BertModel::init_weights(uint64_t seed) {
  std::mt19937_64 rng(seed);
  float* base = params_.host();
  for (const ParamInfo& p : layout_.params()) init_param(p, base + p.offset, config_, rng);
}

// The fine-tuning head's parameters: their meaning depends on the kind (a [K, C] classifier over
// [CLS] is not one over tokens), so they carry over only when the kind does.
static bool task_param(const std::string& name) {
  return name.rfind("classifier.", 0) == 0 || name.rfind("qa_outputs.", 0) == 0;
}

void BertModel::set_heads(const HeadsConfig& new_heads, uint64_t seed) {
  if (quant_mode() == QuantMode::kInt8 && !lora_)  // adapters over it: an fp32 head (lora_int8.h)
    fail("this is an int8 inference model (written by `finetune --qat int8` or `bertrt quantize`): "
         "it cannot be trained or given new heads; fine-tune its float or fake-quant source "
         "instead");
  new_heads.validate();
  if (new_heads.embedding)
    new_heads.embedding->validate(config_.hidden_size, config_.max_position_embeddings);
  if (adapter_)
    fail("new heads while an inference adapter ({}) is set: detach it first", adapter_->source);
  if (lora_ && (new_heads.mlm || new_heads.nsp ||
                (new_heads.embedding && !new_heads.embedding->dense.empty())))
    fail("LoRA adapters train a task head or a sentence-embedding head without Dense modules; "
         "pre-training heads and Dense modules are not supported with them");
  relayout(new_heads, seed);
}

void BertModel::relayout(const HeadsConfig& new_heads, uint64_t seed) {
  HeadsConfig heads = new_heads;
  heads.kind = heads.resolved_kind();
  const bool same_kind = heads.kind == heads_.kind;
  ParamLayout layout = bert_param_layout(config_, heads, lora_ ? &*lora_ : nullptr);
  HostDeviceBuffer params;
  params.assign(layout.total(), 0.0f);
  float* dst = params.host();
  const float* src = params_.host();
  // A kept classifier whose labels are the new ones in another order (a converted checkpoint's
  // id2label): each label keeps its own row, as run_glue.py / run_ner.py map labels by name.
  // from[i]: the old row of the new label i.
  std::vector<size_t> from;
  if (same_kind && heads_.labels != heads.labels &&
      std::is_permutation(heads.labels.begin(), heads.labels.end(), heads_.labels.begin(),
                          heads_.labels.end()))
    for (const std::string& label : heads.labels)
      from.push_back(size_t(std::find(heads_.labels.begin(), heads_.labels.end(), label) -
                            heads_.labels.begin()));
  std::mt19937_64 rng(seed);
  // Weights an int8 model holds only in int8 (adapters over an int8 base) keep their zero slots,
  // untouched: their pages take no memory.
  std::vector<std::string> int8_only;
  for (const ParamInfo& p : layout.params()) {
    const ParamInfo* old = layout_.find(p.name);
    if (old && old->shape == p.shape && !holds_fp32(p.name)) {
      int8_only.push_back(p.name);
      continue;
    }
    if (old && old->shape == p.shape && (same_kind || !task_param(p.name))) {
      if (!from.empty() && p.name.rfind("classifier.", 0) == 0 &&
          size_t(p.shape[0]) == from.size()) {
        const size_t row = p.numel / from.size();  // [num_labels, H] or [num_labels]
        for (size_t i = 0; i < from.size(); ++i)
          std::copy_n(src + old->offset + from[i] * row, row, dst + p.offset + i * row);
      } else {
        std::copy_n(src + old->offset, p.numel, dst + p.offset);
      }
    } else {
      init_param(p, dst + p.offset, config_, rng);
    }
  }
  heads_ = heads;
  layout_ = std::move(layout);
  params_ = std::move(params);
  int8_only_ = std::move(int8_only);
  grads_.clear();
  w_at_ = dw_at_ = nullptr;
  if (quant_) quant_->bind(config_, heads_);
  if (lora_ && quant_mode() == QuantMode::kInt8) float_task_head();
}

// Where the heads leave their loss sums and argmax rows (HeadReadout): slots 0 MLM, 1 NSP, 2–3
// the fine-tuning head (spans use both); argmax rows MLM [P], NSP [B], then the task's.
namespace {
enum LossSlot { kMlmLoss = 0, kNspLoss = 1, kTaskLoss = 2, kLossSlots = 4 };
size_t task_rows(int B, int T) { return std::max(size_t(B) * T, 2 * size_t(B)); }
}  // namespace

ForwardResult BertModel::forward(Backend& be, const EncoderInputs& in, const Targets& t,
                                 bool training) {
  if (quant_) {
    if (training && quant_->mode() != QuantMode::kFakeQuant &&
        !(lora_ && quant_->mode() == QuantMode::kInt8))  // adapters over an int8 base train
      fail("training a {} model: an int8 model is for inference only (written by `finetune --qat "
           "int8` or `bertrt quantize`); fine-tune its float or fake-quant source instead",
           quant_mode_name(quant_->mode()));
    quant_->begin_forward(training);
  }
  check_encoder_inputs(config_, in);
  if (in.packed()) {
    // The heads that read a row per sequence (the pooler's) run on a packed batch; those that
    // read [B, T] positions, and training, take padded batches.
    if (training || t.mlm_positions || t.num_masked || t.nsp_labels || t.labels || t.scores ||
        t.token_labels || t.start_positions || t.end_positions)
      fail("a packed batch is for inference without targets");
    if (heads_.kind == HeadKind::kTokenClassification ||
        heads_.kind == HeadKind::kQuestionAnswering)
      fail("a packed batch cannot run a {} head (its outputs are [B, T]): pad the batch",
           head_kind_name(heads_.kind));
  }
  // Labels the cross-entropy would read past its row: the data readers map labels, so a label
  // ≥ K is a bug upstream, reported before anything runs.
  auto check_labels = [](const int32_t* labels, int rows, int K) {
    for (int i = 0; labels && i < rows; ++i)
      if (labels[i] >= K)
        fail("classifier: label {} at row {} is outside [0, {})", labels[i], i, K);
  };
  const int B = in.B, T = in.T, C = config_.hidden_size, P = t.num_masked;
  if (heads_.nsp) check_labels(t.nsp_labels, B, 2);
  if (heads_.kind == HeadKind::kSequenceClassification)
    check_labels(t.labels, B, heads_.num_labels());
  if (heads_.kind == HeadKind::kTokenClassification)
    check_labels(t.token_labels, B * T, heads_.num_labels());

  if (training && adapter_)
    fail("a training forward with an inference adapter ({}) set: adapters run with set_adapter "
         "are for inference; train with attach_lora",
         adapter_->source);
  bind(be);
  be_ = &be;
  BertQuant* q = quant_.get();
  acts_.lora = lora_      ? LoraRun{lora_->r, lora_->scaling(), lora_->dropout}
               : adapter_ ? LoraRun{adapter_->lora().r, adapter_->lora().scaling(), 0.0f}
                          : LoraRun{};
  if (training && lora_ && lora_->dropout > 0.0f && !be.supports(Op::kDropout))
    fail("LoRA dropout {}: the {} backend has no dropout op; train with lora_dropout 0 on it",
         lora_->dropout, be.name());
  if (in.packed())
    acts_.resize_packed(be, config_, B, T, in.rows());
  else
    acts_.resize(be, config_, B, T, training, plan_);
  batch_.upload(be, in, t, acts_.mask_add);
  encoder_forward(be, config_, w_, acts_, batch_.inputs, batch_.position_ids, q);
  hidden_fresh_ = pooled_fresh_ = prediction_fresh_ = false;

  const Targets& dt = batch_.targets;
  const Targets& ht = batch_.host;
  const float weight = training ? 1.0f : 0.0f;
  ran_mlm_ = heads_.mlm && t.mlm_positions && t.mlm_labels;
  ran_nsp_ = heads_.nsp && t.nsp_labels;
  prediction_overwritten_ = ran_mlm_ && training;
  double* loss = loss_dev_.ensure(be, kLossSlots);
  int32_t* argmax = argmax_dev_.ensure(be, size_t(P) + B + task_rows(B, T));
  const HeadReadout mlm_out{loss + kMlmLoss, argmax}, nsp_out{loss + kNspLoss, argmax + P},
      task_out{loss + kTaskLoss, argmax + P + B};
  if (heads_.mlm && t.mlm_positions)
    mlm_forward(be, config_, w_, mlm_, acts_.hidden, dt.mlm_positions, dt.mlm_labels,
                ht.mlm_labels ? count_labels(ht.mlm_labels, P) : 0, P, weight, mlm_out,
                q ? q->mlm_dense : nullptr, q ? q->mlm_decoder : nullptr);
  if (heads_.nsp)
    classifier_forward(be, nsp_, acts_.pooled, w_.nsp_w, w_.nsp_b, dt.nsp_labels,
                       ht.nsp_labels ? count_labels(ht.nsp_labels, B) : 0, B, C, 2, weight, nsp_out,
                       q ? q->nsp : nullptr);
  task_forward(be, weight, task_out);

  // The one read-back of the forward: loss sums, argmax rows and the small logits.
  double loss_h[kLossSlots] = {};
  std::vector<int32_t> argmax_h(size_t(P) + B + task_rows(B, T));
  if (ran_mlm_) {
    be.download(loss_h + kMlmLoss, loss + kMlmLoss, sizeof(double));
    be.download(argmax_h.data(), argmax, size_t(P) * sizeof(int32_t));
  }
  if (ran_nsp_) {
    be.download(loss_h + kNspLoss, loss + kNspLoss, sizeof(double));
    be.download(argmax_h.data() + P, argmax + P, size_t(B) * sizeof(int32_t));
  }
  if (ran_task_) {
    be.download(loss_h + kTaskLoss, loss + kTaskLoss, 2 * sizeof(double));
    be.download(argmax_h.data() + P + B, argmax + P + B, task_rows(B, T) * sizeof(int32_t));
  }
  auto fetch = [&](std::vector<float>& host, const DeviceArray<float>& dev, size_t n) {
    host.resize(n);
    be.download(host.data(), dev.data(), n * sizeof(float));
  };
  nsp_logits_.clear();
  if (heads_.nsp) fetch(nsp_logits_, nsp_.logits, size_t(B) * 2);
  logits_.clear(), start_logits_.clear(), end_logits_.clear();
  const int K = heads_.num_labels();
  switch (heads_.kind) {
    case HeadKind::kNone:
      break;
    case HeadKind::kSequenceClassification:
      fetch(logits_, cls_.logits, size_t(B) * K);
      break;
    case HeadKind::kRegression:
      fetch(logits_, cls_.logits, size_t(B));
      break;
    case HeadKind::kTokenClassification:
      fetch(logits_, cls_.logits, size_t(B) * T * K);
      break;
    case HeadKind::kQuestionAnswering:
      fetch(start_logits_, span_.start, size_t(B) * T);
      fetch(end_logits_, span_.end, size_t(B) * T);
      break;
  }
  be.sync();
  // Weights that are each finite can still overflow float32 together (a classifier row of 3e38):
  // an inference that would print NaN probabilities, or a NaN metric, with exit 0 is an error.
  // Training forwards are left to the trainer's own non-finite loss checks (--skip-nonfinite).
  if (!training)
    for (const auto& [what, v] : {std::pair<const char*, const std::vector<float>*>{"logits", &logits_},
                                  {"start_logits", &start_logits_},
                                  {"end_logits", &end_logits_},
                                  {"seq_relationship_logits", &nsp_logits_}})
      for (size_t i = 0; i < v->size(); ++i)
        if (!std::isfinite((*v)[i]))
          fail("{}the model's {} are not finite (element {} is {}): its weights overflow float32 "
               "(a damaged, hostile or diverged model)",
               source_.empty() ? "" : source_ + ": ", what, i, (*v)[i]);

  ForwardResult r;
  if (ran_mlm_) r.mlm = classification_result(ht.mlm_labels, argmax_h.data(), P, loss_h[kMlmLoss]);
  r.loss += r.mlm.loss;
  if (ran_nsp_)
    r.nsp = classification_result(ht.nsp_labels, argmax_h.data() + P, B, loss_h[kNspLoss]);
  r.loss += r.nsp.loss;
  if (ran_task_) r.cls = task_result(loss_h + kTaskLoss, argmax_h.data() + P + B);
  r.loss += r.cls.loss;
  if (!logits_.empty()) r.logits = logits_.data();
  if (heads_.kind == HeadKind::kQuestionAnswering)
    r.start_logits = start_logits_.data(), r.end_logits = end_logits_.data();
  return r;
}

// The fine-tuning head's input: x itself, or in a training forward with dropout a dropped copy
// (HF BertForSequenceClassification / BertForTokenClassification: self.dropout(pooled_output),
// classifier_dropout defaulting to hidden_dropout_prob; BertForQuestionAnswering has none).
const float* BertModel::head_input(Backend& be, const float* x, size_t n) {
  const Dropout& d = acts_.dropout;
  head_dropped_ = acts_.training() && d.prob > 0.0f;
  if (!head_dropped_) return x;
  float* y = head_in_.ensure(be, n);
  be.copy(y, x, n * sizeof(float));
  be.dropout(y, n, d.prob, dropout_seed(d.seed, d.step, Dropout::head_site()));
  return y;
}

void BertModel::task_forward(Backend& be, float weight, HeadReadout out) {
  const int B = batch_.inputs.B, T = batch_.inputs.T, C = config_.hidden_size,
            K = heads_.num_labels();
  const Targets& dt = batch_.targets;
  const Targets& ht = batch_.host;
  // An inference adapter's head is fp32, in its own weights (an int8 base's head is not it).
  QuantLinear* q = quant_ && !adapter_
                       ? (heads_.kind == HeadKind::kQuestionAnswering ? quant_->qa : quant_->cls)
                       : nullptr;
  ran_task_ = head_dropped_ = false;
  switch (heads_.kind) {
    case HeadKind::kNone:
      return;
    case HeadKind::kSequenceClassification:
      ran_task_ = dt.labels != nullptr;
      classifier_forward(be, cls_, head_input(be, acts_.pooled, size_t(B) * C), w_.cls_w, w_.cls_b,
                         dt.labels, ran_task_ ? count_labels(ht.labels, B) : 0, B, C, K, weight,
                         out, q);
      return;
    case HeadKind::kRegression:
      ran_task_ = dt.scores != nullptr;
      regression_forward(be, cls_, head_input(be, acts_.pooled, size_t(B) * C), w_.cls_w, w_.cls_b,
                         dt.scores, B, C, weight, out.loss, q);
      return;
    case HeadKind::kTokenClassification:
      ran_task_ = dt.token_labels != nullptr;
      classifier_forward(be, cls_, head_input(be, acts_.hidden, size_t(B) * T * C), w_.cls_w,
                         w_.cls_b, dt.token_labels,
                         ran_task_ ? count_labels(ht.token_labels, B * T) : 0, B * T, C, K, weight,
                         out, q);
      return;
    case HeadKind::kQuestionAnswering: {
      ran_task_ = dt.start_positions && dt.end_positions;
      const int n_start = ran_task_ ? count_labels(ht.start_positions, B) : 0;
      const int n_end = ran_task_ ? count_labels(ht.end_positions, B) : 0;
      span_forward(be, span_, acts_.hidden, w_.qa_w, w_.qa_b, dt.start_positions, dt.end_positions,
                   n_start, n_end, B, T, C, weight, out, q);
      return;
    }
  }
}

HeadResult BertModel::task_result(const double* loss, const int32_t* argmax) const {
  const int B = batch_.inputs.B, T = batch_.inputs.T;
  const Targets& ht = batch_.host;
  switch (heads_.kind) {
    case HeadKind::kSequenceClassification:
      return classification_result(ht.labels, argmax, B, loss[0]);
    case HeadKind::kRegression:
      return regression_result(loss[0], B);
    case HeadKind::kTokenClassification:
      return classification_result(ht.token_labels, argmax, B * T, loss[0]);
    case HeadKind::kQuestionAnswering:
      return span_result(ht.start_positions, ht.end_positions, argmax, loss, B);
    case HeadKind::kNone:
      break;
  }
  return {};
}

void BertModel::backward(Backend& be) {
  if (!acts_.training()) fail("backward() needs a forward(training=true) first");
  if (&be != be_) fail("backward() on backend '{}': the forward ran on another", be.name());
  grads(be);  // allocated and bound on `be`
  BertQuant* q = quant_.get();
  const EncoderInputs& in = batch_.inputs;
  if (ran_mlm_) {
    // Frozen embeddings: the tied decoder's weight gradient ([V, C], the largest) would only be
    // zeroed before the update (UpdateRule), so it is not computed and its pages stay unwritten.
    BertParams dmlm = dw_;
    if (!plan_.embeddings) dmlm.word_emb = nullptr;
    mlm_backward(be, config_, dmlm, mlm_, acts_.dhidden, w_, batch_.targets.mlm_positions,
                 q ? q->mlm_dense : nullptr, q ? q->mlm_decoder : nullptr);
  }
  if (ran_nsp_)
    classifier_backward(be, acts_.dpooled, dw_.nsp_w, dw_.nsp_b, nsp_, acts_.pooled, w_.nsp_w, in.B,
                        config_.hidden_size, 2, q ? q->nsp : nullptr);
  if (ran_task_) task_backward(be);
  encoder_backward(be, config_, dw_, acts_, w_, in, batch_.position_ids, q);
}

void BertModel::backward_from_hidden(Backend& be, const float* dhidden) {
  if (!acts_.training()) fail("backward_from_hidden() needs a forward(training=true) first");
  if (ran_mlm_ || ran_nsp_ || ran_task_)
    fail("backward_from_hidden(): the forward ran a head's loss; its gradient would be lost");
  if (&be != be_) fail("backward_from_hidden() on backend '{}': the forward ran on another", be.name());
  const EncoderInputs& in = batch_.inputs;
  // The forward zeroed dhidden and dpooled (encoder_forward); the pooler gets no gradient.
  be.upload(acts_.dhidden, dhidden, size_t(in.B) * in.T * config_.hidden_size * sizeof(float));
  backward(be);
}

void BertModel::backward_from_hidden(Backend& be) {
  hidden_gradient(be);  // the checks
  if (ran_mlm_ || ran_nsp_ || ran_task_)
    fail("backward_from_hidden(): the forward ran a head's loss; its gradient would be lost");
  backward(be);
}

const float* BertModel::last_hidden_state(Backend& be) const {
  if (&be != be_ || !acts_.hidden)
    fail("last_hidden_state() on backend '{}': the last forward ran on another", be.name());
  return acts_.hidden;
}

float* BertModel::hidden_gradient(Backend& be) {
  if (!acts_.training()) fail("hidden_gradient() needs a forward(training=true) first");
  if (&be != be_) fail("hidden_gradient() on backend '{}': the forward ran on another", be.name());
  return acts_.dhidden;
}

void BertModel::set_backward_plan(const BackwardPlan& plan) {
  if (plan.first_layer < 0 || plan.first_layer > config_.num_hidden_layers ||
      (plan.embeddings && plan.first_layer != 0))
    fail("backward plan: first trainable layer {} (of {}) with embeddings {}: the embeddings "
         "backward needs every layer's backward", plan.first_layer, config_.num_hidden_layers,
         plan.embeddings ? "trainable" : "frozen");
  if (lora_ && (plan.embeddings || plan.first_layer != 0))
    fail("backward plan: with LoRA adapters the base is frozen and every layer's backward runs "
         "(first layer 0, no embeddings backward)");
  plan_ = plan;
}

void BertModel::task_backward(Backend& be) {
  const int B = batch_.inputs.B, T = batch_.inputs.T, C = config_.hidden_size,
            K = heads_.num_labels();
  QuantLinear* q = quant_ ? (heads_.kind == HeadKind::kQuestionAnswering ? quant_->qa : quant_->cls)
                          : nullptr;
  // The head's input and where its gradient goes: with the input dropped, the gradient is taken
  // w.r.t. the dropped copy, masked again and added to dpooled / dhidden.
  const bool tokens = heads_.kind == HeadKind::kTokenClassification;
  const size_t n = size_t(tokens ? B * T : B) * C;
  float* const dst = tokens ? acts_.dhidden : acts_.dpooled;
  const float* inp = tokens ? acts_.hidden : acts_.pooled;
  float* dinp = dst;
  if (head_dropped_) {
    inp = head_in_.data();
    dinp = dhead_in_.ensure(be, n);
    be.fill(dinp, 0.0f, n);
  }
  switch (heads_.kind) {
    case HeadKind::kSequenceClassification:
      classifier_backward(be, dinp, dw_.cls_w, dw_.cls_b, cls_, inp, w_.cls_w, B, C, K, q);
      break;
    case HeadKind::kRegression:
      regression_backward(be, dinp, dw_.cls_w, dw_.cls_b, cls_, inp, w_.cls_w, B, C, q);
      break;
    case HeadKind::kTokenClassification:
      classifier_backward(be, dinp, dw_.cls_w, dw_.cls_b, cls_, inp, w_.cls_w, B * T, C, K, q);
      break;
    case HeadKind::kQuestionAnswering:
      span_backward(be, acts_.dhidden, dw_.qa_w, dw_.qa_b, span_, acts_.hidden, w_.qa_w, B, T, C,
                    q);
      break;
    case HeadKind::kNone:
      break;
  }
  if (head_dropped_) {
    const Dropout& d = acts_.dropout;
    be.dropout(dinp, n, d.prob, dropout_seed(d.seed, d.step, Dropout::head_site()));
    be.add(dst, dst, dinp, n);
  }
}

// The host copy of `n` floats of the last forward's backend memory (downloaded once per forward).
static const float* host_copy(Backend* be, const float* dev, size_t n, std::vector<float>& host,
                              bool& fresh) {
  if (!be || !dev) return nullptr;
  if (!fresh) {
    host.resize(n);
    be->download(host.data(), dev, n * sizeof(float));
    be->sync();
    fresh = true;
  }
  return host.data();
}

const float* BertModel::last_hidden_state() const {
  return host_copy(be_, acts_.hidden, size_t(acts_.rows()) * config_.hidden_size,
                   hidden_host_, hidden_fresh_);
}

const float* BertModel::pooler_output() const {
  return host_copy(be_, acts_.pooled, size_t(acts_.B()) * config_.hidden_size, pooled_host_,
                   pooled_fresh_);
}

const float* BertModel::prediction_logits() const {
  if (prediction_overwritten_)
    fail("prediction_logits() after a training forward with MLM labels: the head's "
         "cross-entropy wrote the logits' gradient over them; run a forward with training off");
  return host_copy(be_, mlm_.P ? mlm_.logits : nullptr, size_t(mlm_.P) * config_.vocab_size,
                   prediction_host_, prediction_fresh_);
}

const float* BertModel::mlm_logits_all(Backend& be) {
  if (!heads_.mlm) fail("this model has no MLM head (cls.predictions.*)");
  if (&be != be_) fail("mlm_logits_all() on backend '{}': the forward ran on another", be.name());
  const int N = acts_.rows();
  std::vector<int32_t> rows(static_cast<size_t>(N));
  std::iota(rows.begin(), rows.end(), 0);
  int32_t* positions = all_positions_.ensure(be, rows.size());
  be.upload(positions, rows.data(), rows.size() * sizeof(int32_t));
  if (quant_) quant_->begin_forward(false);
  mlm_forward(be, config_, w_, mlm_, acts_.hidden, positions, nullptr, 0, N, 0.0f, HeadReadout{},
              quant_ ? quant_->mlm_dense : nullptr, quant_ ? quant_->mlm_decoder : nullptr);
  prediction_fresh_ = prediction_overwritten_ = false;
  return prediction_logits();
}

bool BertModel::is_base_param(const std::string& name) const {
  return name.find(".lora_A.") == std::string::npos && name.find(".lora_B.") == std::string::npos &&
         !task_param(name);
}

void BertModel::attach_lora(const LoraConfig& lora, uint64_t seed, const std::string& where) {
  if (lora_) fail("{}: the model already carries LoRA adapters", where);
  if (adapter_)
    fail("{}: an inference adapter ({}) is set: detach it first", where, adapter_->source);
  // Over an int8 model (lora_int8.h) the base stays int8 and the head becomes fp32; a model in
  // QAT or calibration is still being quantized.
  if ((quant_ && quant_mode() != QuantMode::kInt8) || (!quant_ && !int8_only_.empty()))
    fail("{}: LoRA over a {} model is not supported; attach it to the float model or to the "
         "int8 model it becomes",
         where, quant_mode_name(quant_mode()));
  if (heads_.mlm || heads_.nsp || (heads_.embedding && !heads_.embedding->dense.empty()))
    fail("{}: LoRA adapters train a task head (sequence or token classification, regression, "
         "question answering) or a sentence-embedding head without Dense modules; this model "
         "carries {}",
         where, heads_.embedding ? "an embedding head with Dense modules" : "pre-training heads");
  lora_sites(config_, lora, where);  // the errors name `where`, before anything changes
  if (quant_mode() == QuantMode::kInt8) float_task_head();  // its fp32 values, before relayout
  lora_ = lora;
  relayout(heads_, seed);
  // Every layer's backward runs (dX down to the lowest adapter), the embeddings' does not.
  plan_.first_layer = 0, plan_.embeddings = false;
}

void BertModel::set_adapter(std::shared_ptr<const LoraAdapter> adapter) {
  if (adapter == adapter_) return;
  if (adapter) {
    const std::string& where = adapter->source.empty() ? "adapter" : adapter->source;
    if (lora_)
      fail("{}: this model carries trained LoRA adapters of its own (attach_lora); an inference "
           "adapter runs over a plain base",
           where);
    // An int8 base runs its int8 kernels and adds the adapters beside them (lora_int8.h); a
    // model in QAT or calibration is still being quantized.
    if ((quant_ && quant_mode() != QuantMode::kInt8) || (!quant_ && !int8_only_.empty()))
      fail("{}: LoRA adapters over a {} base are not supported; run them over the float base or "
           "the int8 model it becomes",
           where, quant_mode_name(quant_mode()));
    const BertConfig &a = adapter->config(), &b = config_;
    if (a.hidden_size != b.hidden_size || a.num_hidden_layers != b.num_hidden_layers ||
        a.intermediate_size != b.intermediate_size ||
        a.num_attention_heads != b.num_attention_heads || a.vocab_size != b.vocab_size)
      fail("{} was made for a base of hidden_size {}, {} layers, {} heads, intermediate_size {}, "
           "vocab_size {}; this model has {}, {}, {}, {}, {}",
           where, a.hidden_size, a.num_hidden_layers, a.num_attention_heads, a.intermediate_size,
           a.vocab_size, b.hidden_size, b.num_hidden_layers, b.num_attention_heads,
           b.intermediate_size, b.vocab_size);
    if (!adapter_) base_heads_ = heads_;
    heads_ = adapter->heads();
    if (std::find(adapters_run_.begin(), adapters_run_.end(), adapter) == adapters_run_.end())
      adapters_run_.push_back(adapter);
  } else {
    heads_ = base_heads_;
  }
  adapter_ = std::move(adapter);
  w_at_ = adapter_at_ = nullptr;  // rebound at the next forward
  logits_.clear(), start_logits_.clear(), end_logits_.clear(), nsp_logits_.clear();
}

void BertModel::merge_lora() {
  if (!lora_) fail("merge: the model carries no LoRA adapters");
  if (quant_mode() == QuantMode::kInt8)
    fail("merge: {} is an int8 model; an adapter over an int8 base runs unmerged beside its int8 "
         "Linears (--adapter), or merge an adapter trained on the float base, then quantize "
         "(docs/explanation/lora.md)",
         source_.empty() ? "the base" : source_);
  float* p = params_.host();
  for (const LoraSite& s : lora_sites(config_, *lora_, "LoRA"))
    lora_merge(p + layout_.at(s.name + ".weight").offset, p + layout_.at(s.a()).offset,
               p + layout_.at(s.b()).offset, s.out_f, s.in_f, lora_->r, lora_->scaling());
  lora_.reset();
  relayout(heads_, 0);
  plan_ = BackwardPlan{};
}

}  // namespace bertrt
