// BertModel's quantization modes (bert_model.h "Quantization"): QAT, PTQ calibration, the int8
// conversion. The per-Linear math is in quant/quant_linear.cpp, the bookkeeping in bert_quant.cpp.
#include <algorithm>

#include "core/error.h"
#include "model/bert_model.h"

namespace bertrt {

void BertModel::enable_qat(const QatConfig& config) {
  if (quant_mode() == QuantMode::kInt8)
    fail("QAT on an int8 inference model: fine-tune its float or fake-quant source instead");
  if (adapter_)
    fail("QAT with an inference adapter ({}) set: detach it first", adapter_->source);
  if (lora_)
    fail("QAT with LoRA adapters is not supported: train the adapters in fp32, or merge them "
         "(bertrt merge) and quantize the merged model");
  auto q = std::make_unique<BertQuant>(config_, heads_, QuantMode::kFakeQuant, config);
  // A fake-quant model (a QAT file, or a calibrated one) keeps its ranges and keeps learning them.
  if (quant_ && quant_->mode() == QuantMode::kFakeQuant) {
    for (auto& [name, ql] : q->linears()) {
      auto it = quant_->linears().find(name);
      if (it == quant_->linears().end() || !it->second.observer.initialized()) continue;
      const ActivationObserver& o = it->second.observer;
      ql.observer.restore(o.min(), o.max(), o.updates(), /*frozen=*/false);
    }
  }
  quant_ = std::move(q);
}

void BertModel::begin_calibration(bool int8_embeddings) {
  if (quant_mode() == QuantMode::kInt8)
    fail("calibration of an int8 model: calibrate its float source instead");
  if (lora_ || adapter_)
    fail("calibration of a model with LoRA adapters: merge them first (bertrt merge)");
  QatConfig c;
  c.int8_embeddings = int8_embeddings;
  quant_ = std::make_unique<BertQuant>(config_, heads_, QuantMode::kCalibrate, c);
}

void BertModel::finish_calibration() {
  if (quant_mode() != QuantMode::kCalibrate)
    fail("finish_calibration() without begin_calibration()");
  for (auto& [name, q] : quant_->linears()) q.finish_calibration(name.c_str());
  quant_->set_mode(QuantMode::kFakeQuant);
}

void BertModel::convert_to_int8() {
  if (quant_mode() != QuantMode::kFakeQuant)
    fail("int8 conversion needs a fake-quant model (QAT-trained or calibrated), this one is {}",
         quant_mode_name(quant_mode()));
  const int C = config_.hidden_size;
  EmbeddingQuant& e = quant_->emb;
  float* base = params_.host();  // the export reads and rewrites the weights on the host
  const BertParams hw = bind_params(layout_, config_, base);
  // The fp32 copies become the dequantized values (= the fake-quant weights), so that this model
  // and the same model read back from its int8 file are identical.
  auto table = [&](EmbeddingTableQuant& t, float* w, int rows) {
    t.w8 = quantize_weight_s8(w, rows, C);
    t.dev = Int8WeightMirror{};
    for (size_t i = 0; i < t.w8.q.size(); ++i) w[i] = float(t.w8.q[i]) * t.w8.scale[i / size_t(C)];
  };
  if (e.int8) {
    table(e.word, hw.word_emb, config_.vocab_size);
    table(e.pos, hw.pos_emb, config_.max_position_embeddings);
    table(e.type, hw.type_emb, config_.type_vocab_size);
  }
  for (const LinearSite& s : linear_sites(config_, heads_)) {
    QuantLinear& q = quant_->at(s.name);
    float* w = base + layout_.at(s.weight).offset;
    if (s.name == "cls.predictions.decoder" && e.int8) {  // the int8 word table, shared
      if (!q.observer.initialized())
        fail("int8 export: Linear '{}' has no activation range", s.name);
      q.w8 = e.word.w8.view();
      q.dev8 = Int8WeightMirror{};
      q.act = q.observer.qparams();
      continue;
    }
    q.make_int8(w, s.out_f, s.in_f, s.name.c_str());
    for (size_t i = 0; i < q.own8.q.size(); ++i)
      w[i] = float(q.own8.q[i]) * q.own8.scale[i / size_t(s.in_f)];
  }
  quant_->set_mode(QuantMode::kInt8);
  quant_->set_observers_frozen(true);
  grads_.clear();
  dw_at_ = nullptr;
}

void BertModel::disable_quantization() {
  if (!int8_only_.empty() && quant_) {
    // Loaded from an int8 file: the fp32 values are the dequantized integers, as in
    // convert_to_int8 (and tensor_to_f32: float(q − 0) · scale is the same float).
    float* base = params_.host();
    auto restore = [&](const std::string& name, const Int8WeightView& w) {
      if (holds_fp32(name)) return;
      float* x = base + layout_.at(name).offset;
      for (int r = 0; r < w.rows; ++r)
        for (int c = 0; c < w.cols; ++c) {
          const size_t i = size_t(r) * w.cols + c;
          x[i] = float(w.q[i]) * w.scale[r];
        }
    };
    const EmbeddingQuant& e = quant_->emb;
    if (e.int8) {
      restore("bert.embeddings.word_embeddings.weight", e.word.w8.view());
      restore("bert.embeddings.position_embeddings.weight", e.pos.w8.view());
      restore("bert.embeddings.token_type_embeddings.weight", e.type.w8.view());
    }
    for (const LinearSite& s : linear_sites(config_, heads_))
      if (s.name != "cls.predictions.decoder") restore(s.weight, quant_->at(s.name).w8);
  }
  int8_only_.clear();
  quant_.reset();
}

void BertModel::set_quant(std::unique_ptr<BertQuant> quant) { quant_ = std::move(quant); }

}  // namespace bertrt
