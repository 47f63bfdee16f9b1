#include "model/bert_model.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/random.h"
#include "heads/regression_head.h"

namespace bertrt {

BertModel::BertModel(BertConfig config, HeadsConfig heads)
    : config_(std::move(config)), heads_(std::move(heads)) {
  config_.validate();
  heads_.validate();
  heads_.kind = heads_.resolved_kind();
  layout_ = bert_param_layout(config_, heads_);
  params_.assign(layout_.total(), 0.0f);
  w_ = bind_params(layout_, config_, params_.data());
}

float* BertModel::grads() {
  if (grads_.size() != layout_.total()) {
    grads_.assign(layout_.total(), 0.0f);
    dw_ = bind_params(layout_, config_, grads_.data());
  }
  return grads_.data();
}

void BertModel::zero_grad() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

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
  if (layernorm) {
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
  for (const ParamInfo& p : layout_.params()) init_param(p, params_.data() + p.offset, config_, rng);
}

// The fine-tuning head's parameters: their meaning depends on the kind (a [K, C] classifier over
// [CLS] is not one over tokens), so they carry over only when the kind does.
static bool task_param(const std::string& name) {
  return name.rfind("classifier.", 0) == 0 || name.rfind("qa_outputs.", 0) == 0;
}

void BertModel::set_heads(const HeadsConfig& new_heads, uint64_t seed) {
  if (quant_mode() == QuantMode::kInt8)
    fail("this is an int8 inference model (written by `finetune --qat int8` or `bertrt quantize`): "
         "it cannot be trained or given new heads; fine-tune its float or fake-quant source "
         "instead");
  new_heads.validate();
  HeadsConfig heads = new_heads;
  heads.kind = heads.resolved_kind();
  const bool same_kind = heads.kind == heads_.kind;
  ParamLayout layout = bert_param_layout(config_, heads);
  FloatBuffer params(layout.total(), 0.0f);
  std::mt19937_64 rng(seed);
  for (const ParamInfo& p : layout.params()) {
    const ParamInfo* old = layout_.find(p.name);
    if (old && old->shape == p.shape && (same_kind || !task_param(p.name)))
      std::copy_n(params_.data() + old->offset, p.numel, params.data() + p.offset);
    else
      init_param(p, params.data() + p.offset, config_, rng);
  }
  heads_ = heads;
  layout_ = std::move(layout);
  params_ = std::move(params);
  w_ = bind_params(layout_, config_, params_.data());
  grads_.clear();
  if (quant_) quant_->bind(config_, heads_);
}

ForwardResult BertModel::forward(Backend& be, const EncoderInputs& in, const Targets& t,
                                 bool training) {
  if (quant_) {
    if (training && quant_->mode() != QuantMode::kFakeQuant)
      fail("training a {} model: an int8 model is for inference only (written by `finetune --qat "
           "int8` or `bertrt quantize`); fine-tune its float or fake-quant source instead",
           quant_mode_name(quant_->mode()));
    quant_->begin_forward(training);
  }
  BertQuant* q = quant_.get();
  acts_.resize(config_, in.B, in.T, training, plan_);
  encoder_forward(be, config_, w_, acts_, in, q);
  in_ = in;
  targets_ = t;
  ForwardResult r;
  const float weight = training ? 1.0f : 0.0f;
  ran_mlm_ = heads_.mlm && t.mlm_positions && t.mlm_labels;
  ran_nsp_ = heads_.nsp && t.nsp_labels;
  if (heads_.mlm && t.mlm_positions) {
    r.mlm = mlm_forward(be, config_, w_, mlm_, acts_.hidden, t.mlm_positions, t.mlm_labels,
                        t.num_masked, weight, q ? q->mlm_dense : nullptr,
                        q ? q->mlm_decoder : nullptr);
    r.loss += r.mlm.loss;
  }
  if (heads_.nsp) {
    r.nsp = classifier_forward(be, nsp_, acts_.pooled, w_.nsp_w, w_.nsp_b, t.nsp_labels, in.B,
                               config_.hidden_size, 2, weight, q ? q->nsp : nullptr);
    r.loss += r.nsp.loss;
  }
  r.cls = task_forward(be, t, weight, r);
  r.loss += r.cls.loss;
  return r;
}

HeadResult BertModel::task_forward(Backend& be, const Targets& t, float weight, ForwardResult& r) {
  const int B = in_.B, T = in_.T, C = config_.hidden_size, K = heads_.num_labels();
  QuantLinear* q = quant_ ? (heads_.kind == HeadKind::kQuestionAnswering ? quant_->qa : quant_->cls)
                          : nullptr;
  // Outputs of another kind from an earlier forward must not look current.
  if (heads_.kind == HeadKind::kQuestionAnswering) cls_ = {};
  else span_ = {};
  ran_task_ = false;
  switch (heads_.kind) {
    case HeadKind::kNone:
      return {};
    case HeadKind::kSequenceClassification: {
      ran_task_ = t.labels != nullptr;
      HeadResult h = classifier_forward(be, cls_, acts_.pooled, w_.cls_w, w_.cls_b, t.labels, B, C,
                                        K, weight, q);
      r.logits = cls_.logits.data();
      return h;
    }
    case HeadKind::kRegression: {
      ran_task_ = t.scores != nullptr;
      HeadResult h = regression_forward(be, cls_, acts_.pooled, w_.cls_w, w_.cls_b, t.scores, B,
                                        C, weight, q);
      r.logits = cls_.logits.data();
      return h;
    }
    case HeadKind::kTokenClassification: {
      ran_task_ = t.token_labels != nullptr;
      HeadResult h = classifier_forward(be, cls_, acts_.hidden, w_.cls_w, w_.cls_b,
                                        t.token_labels, B * T, C, K, weight, q);
      r.logits = cls_.logits.data();
      return h;
    }
    case HeadKind::kQuestionAnswering: {
      ran_task_ = t.start_positions && t.end_positions;
      HeadResult h = span_forward(be, span_, acts_.hidden, w_.qa_w, w_.qa_b, t.start_positions,
                                  t.end_positions, B, T, C, weight, q);
      r.start_logits = span_.start.data();
      r.end_logits = span_.end.data();
      return h;
    }
  }
  return {};
}

void BertModel::backward(Backend& be) {
  if (!acts_.training()) fail("backward() needs a forward(training=true) first");
  grads();
  BertQuant* q = quant_.get();
  if (ran_mlm_)
    mlm_backward(be, config_, dw_, mlm_, acts_.dhidden, w_, targets_.mlm_positions,
                 q ? q->mlm_dense : nullptr, q ? q->mlm_decoder : nullptr);
  if (ran_nsp_)
    classifier_backward(be, acts_.dpooled, dw_.nsp_w, dw_.nsp_b, nsp_, acts_.pooled, w_.nsp_w,
                        in_.B, config_.hidden_size, 2, q ? q->nsp : nullptr);
  if (ran_task_) task_backward(be);
  encoder_backward(be, config_, dw_, acts_, w_, in_, q);
}

void BertModel::set_backward_plan(const BackwardPlan& plan) {
  if (plan.first_layer < 0 || plan.first_layer > config_.num_hidden_layers ||
      (plan.embeddings && plan.first_layer != 0))
    fail("backward plan: first trainable layer {} (of {}) with embeddings {}: the embeddings "
         "backward needs every layer's backward", plan.first_layer, config_.num_hidden_layers,
         plan.embeddings ? "trainable" : "frozen");
  plan_ = plan;
}

void BertModel::task_backward(Backend& be) {
  const int B = in_.B, T = in_.T, C = config_.hidden_size, K = heads_.num_labels();
  QuantLinear* q = quant_ ? (heads_.kind == HeadKind::kQuestionAnswering ? quant_->qa : quant_->cls)
                          : nullptr;
  switch (heads_.kind) {
    case HeadKind::kSequenceClassification:
      classifier_backward(be, acts_.dpooled, dw_.cls_w, dw_.cls_b, cls_, acts_.pooled, w_.cls_w,
                          B, C, K, q);
      break;
    case HeadKind::kRegression:
      regression_backward(be, acts_.dpooled, dw_.cls_w, dw_.cls_b, cls_, acts_.pooled, w_.cls_w,
                          B, C, q);
      break;
    case HeadKind::kTokenClassification:
      classifier_backward(be, acts_.dhidden, dw_.cls_w, dw_.cls_b, cls_, acts_.hidden, w_.cls_w,
                          B * T, C, K, q);
      break;
    case HeadKind::kQuestionAnswering:
      span_backward(be, acts_.dhidden, dw_.qa_w, dw_.qa_b, span_, acts_.hidden, w_.qa_w, B, T, C,
                    q);
      break;
    case HeadKind::kNone:
      break;
  }
}

const float* BertModel::mlm_logits_all(Backend& be) {
  if (!heads_.mlm) fail("this model has no MLM head (cls.predictions.*)");
  all_positions_.resize(size_t(in_.B) * in_.T);
  std::iota(all_positions_.begin(), all_positions_.end(), 0);
  if (quant_) quant_->begin_forward(false);
  mlm_forward(be, config_, w_, mlm_, acts_.hidden, all_positions_.data(), nullptr,
              int(all_positions_.size()), 0.0f, quant_ ? quant_->mlm_dense : nullptr,
              quant_ ? quant_->mlm_decoder : nullptr);
  return mlm_.logits;
}

}  // namespace bertrt
