#include "io/quant_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"

namespace bertrt {

namespace {

constexpr const char* kObserverSuffix = ".input_observer";

TensorRecord i8_record(const std::string& name, const Int8Weight& w) {
  TensorRecord t;
  t.name = name;
  t.shape = {w.rows, w.cols};
  t.dtype = DType::i8;
  t.scales = w.scale;
  t.axis = 0;
  t.data = reinterpret_cast<const uint8_t*>(w.data());
  t.nbytes = size_t(w.rows) * w.cols;
  return t;
}

void replace_record(ModelContents& c, TensorRecord t) {
  for (TensorRecord& r : c.tensors)
    if (r.name == t.name) {
      r = std::move(t);
      return;
    }
  fail("int8 export: no tensor '{}' to replace", t.name);
}

// An Int8Weight from an i8 record [rows, cols] with per-row scales (axis 0, zero points 0): its
// integers used in place from the file's mapping (one pass here checks them and sums the rows).
Int8Weight int8_from_record(const ModelFile& file, const TensorRecord& t, int rows, int cols) {
  const std::string& path = file.path();
  if (t.dtype != DType::i8 || t.axis != 0 || t.scales.size() != size_t(rows) ||
      t.shape != std::vector<int64_t>{rows, cols})
    fail(
        "{}: tensor '{}' must be i8 [{}, {}] with {} per-row scales (axis 0) in an int8 model; "
        "it is {} with axis {} and {} scales",
        path, t.name, rows, cols, rows, dtype_name(t.dtype), t.axis, t.scales.size());
  for (int64_t z : t.zero_points)
    if (z != 0)
      fail("{}: tensor '{}': int8 weights are symmetric, zero point {} found", path, t.name, z);
  for (size_t r = 0; r < t.scales.size(); ++r)
    if (!(t.scales[r] > 0.0f) || !std::isfinite(t.scales[r]))
      fail("{}: tensor '{}': scale {} of row {} must be positive and finite", path, t.name,
           t.scales[r], r);
  Int8Weight w;
  w.rows = rows, w.cols = cols;
  w.mapped = reinterpret_cast<const int8_t*>(t.data);
  w.keep = file.mapping();
  w.scale = t.scales;
  w.row_sum.resize(size_t(rows));
  for (int r = 0; r < rows; ++r) {
    const int8_t* q = w.mapped + size_t(r) * cols;
    int32_t sum = 0;
    int8_t lo = 0;
    for (int c = 0; c < cols; ++c) sum += q[c], lo = std::min(lo, q[c]);  // vectorises
    if (lo == -128)
      fail("{}: tensor '{}': -128 found, int8 weights are in [-127, 127]", path, t.name);
    w.row_sum[r] = sum;
  }
  return w;
}

std::string meta(const ModelContents& c, const std::string& key, const std::string& fallback) {
  auto it = c.metadata.find(key);
  return it == c.metadata.end() ? fallback : it->second;
}

}  // namespace

bool is_observer_tensor(const std::string& name) {
  const size_t n = std::char_traits<char>::length(kObserverSuffix);
  return name.size() > n && name.compare(name.size() - n, n, kObserverSuffix) == 0;
}

void append_quantization(const BertModel& model, ModelContents& c,
                         std::deque<std::array<float, 2>>& storage) {
  const BertQuant* q = model.quant();
  if (!q) return;
  if (q->mode() != QuantMode::kFakeQuant && q->mode() != QuantMode::kInt8)
    fail("saving a model in {} mode: finish the calibration first", quant_mode_name(q->mode()));
  const BertConfig& cfg = model.config();
  for (const LinearSite& s : linear_sites(cfg, model.heads())) {
    const QuantLinear& ql = q->linears().at(s.name);
    if (!ql.observer.initialized())
      fail(
          "saving a quantized model: Linear '{}' has no activation range yet (no training step "
          "or calibration batch reached it)",
          s.name);
    storage.push_back({ql.observer.min(), ql.observer.max()});
    TensorRecord t;
    t.name = s.name + kObserverSuffix;
    t.shape = {2};
    t.dtype = DType::f32;
    t.data = reinterpret_cast<const uint8_t*>(storage.back().data());
    t.nbytes = 2 * sizeof(float);
    c.tensors.push_back(std::move(t));
    if (q->mode() == QuantMode::kInt8 && !(s.name == "cls.predictions.decoder"))
      replace_record(c, i8_record(s.weight, ql.own8));  // own8 holds the Linear's weight
  }
  if (q->mode() == QuantMode::kInt8 && q->emb.int8) {
    replace_record(c, i8_record("bert.embeddings.word_embeddings.weight", q->emb.word.w8));
    replace_record(c, i8_record("bert.embeddings.position_embeddings.weight", q->emb.pos.w8));
    replace_record(c, i8_record("bert.embeddings.token_type_embeddings.weight", q->emb.type.w8));
  }
  c.metadata["quantization"] = q->mode() == QuantMode::kInt8 ? "int8" : "fake-quant";
  c.metadata["quantization.embeddings"] = q->emb.int8 ? "int8" : "float";
  c.metadata["quantization.observer_momentum"] = fmt::format("{}", q->qat().observer_momentum);
  c.metadata["quantization.observers_frozen"] = q->observers_frozen() ? "true" : "false";
}

std::vector<std::string> int8_weight_names(const ModelFile& file, const BertConfig& config,
                                           const HeadsConfig& heads) {
  const ModelContents& c = file.contents();
  std::vector<std::string> names;
  if (meta(c, "quantization", "") != "int8") return names;
  if (meta(c, "quantization.embeddings", "float") == "int8")
    names = {"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
             "bert.embeddings.token_type_embeddings.weight"};
  for (const LinearSite& s : linear_sites(config, heads))
    if (s.name != "cls.predictions.decoder") names.push_back(s.weight);
  return names;
}

void restore_quantization(BertModel& model, const ModelFile& file) {
  const ModelContents& c = file.contents();
  const std::string& path = file.path();
  const std::string kind = meta(c, "quantization", "");
  if (kind.empty()) return;
  if (kind != "fake-quant" && kind != "int8")
    fail("{}: metadata quantization = '{}': expected 'fake-quant' or 'int8'", path, kind);
  const std::string emb = meta(c, "quantization.embeddings", "float");
  if (emb != "int8" && emb != "float")
    fail("{}: metadata quantization.embeddings = '{}': expected 'int8' or 'float'", path, emb);
  QatConfig qc;
  qc.int8_embeddings = emb == "int8";
  try {
    qc.observer_momentum = std::stof(meta(c, "quantization.observer_momentum", "0.01"));
  } catch (const std::exception&) {
    fail("{}: metadata quantization.observer_momentum is not a number", path);
  }
  // Ranges read from a file are what eval must use: frozen unless training goes on (enable_qat
  // unfreezes them).
  const bool int8 = kind == "int8";
  auto q = std::make_unique<BertQuant>(model.config(), model.heads(), QuantMode::kFakeQuant, qc);
  for (const LinearSite& s : linear_sites(model.config(), model.heads())) {
    const TensorRecord& t = file.at(s.name + kObserverSuffix);
    if (t.dtype != DType::f32 || t.shape != std::vector<int64_t>{2})
      fail("{}: tensor '{}' must be f32 [2] (min, max)", path, t.name);
    float r[2];
    std::memcpy(r, t.data, sizeof r);
    QuantLinear& ql = q->at(s.name);
    try {
      ql.observer.restore(r[0], r[1], 1, /*frozen=*/true);
      ql.act = ql.observer.qparams();
    } catch (const Error& e) {
      fail("{}: tensor '{}': {}", path, t.name, e.what());
    }
    // A range wider than float can subtract ([-3e38, 3e38]) gives an infinite uint8 scale, which
    // would fail only when an input is quantized, naming neither the file nor the tensor.
    if (!std::isfinite(ql.act.scale) || !(ql.act.scale > 0.0f))
      fail("{}: tensor '{}': activation range [{}, {}] gives uint8 scale {}: a range must give a "
           "finite, positive scale", path, t.name, r[0], r[1], ql.act.scale);
  }
  if (int8) {
    const BertConfig& cfg = model.config();
    const int C = cfg.hidden_size;
    EmbeddingQuant& e = q->emb;
    if (e.int8) {
      e.word.w8 = int8_from_record(file, file.at("bert.embeddings.word_embeddings.weight"),
                                   cfg.vocab_size, C);
      e.pos.w8 = int8_from_record(file, file.at("bert.embeddings.position_embeddings.weight"),
                                  cfg.max_position_embeddings, C);
      e.type.w8 = int8_from_record(file, file.at("bert.embeddings.token_type_embeddings.weight"),
                                   cfg.type_vocab_size, C);
    }
    for (const LinearSite& s : linear_sites(cfg, model.heads())) {
      QuantLinear& ql = q->at(s.name);
      if (s.name == "cls.predictions.decoder") {
        if (e.int8) {
          ql.w8 = e.word.w8.view();
        } else {  // float table: the decoder's int8 weight is derived (as QAT fake-quantized it)
          ql.own8 = quantize_weight_s8(model.params() + model.layout().at(s.weight).offset, s.out_f,
                                       s.in_f);
          ql.w8 = ql.own8.view();
        }
        continue;
      }
      ql.own8 = int8_from_record(file, file.at(s.weight), s.out_f, s.in_f);
      ql.w8 = ql.own8.view();
    }
    q->set_mode(QuantMode::kInt8);
  }
  model.set_quant(std::move(q));
}

}  // namespace bertrt
