#include "io/adapter_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/crc32c.h"
#include "core/error.h"
#include "io/model_file.h"
#include "io/peft_adapter.h"

namespace bertrt {

namespace {

// The int8 weights of an int8 model's base, by tensor name: its Linears' and (int8 embeddings)
// its tables.
std::map<std::string, Int8WeightView> int8_base_weights(const BertModel& model) {
  std::map<std::string, Int8WeightView> w;
  const BertQuant* q = model.quant();
  if (!q || q->mode() != QuantMode::kInt8) return w;
  for (const LinearSite& s : linear_sites(model.config(), model.heads())) {
    if (s.weight.rfind("bert.", 0) != 0 || s.name == "cls.predictions.decoder") continue;
    const auto it = q->linears().find(s.name);
    if (it != q->linears().end() && it->second.mode == QuantMode::kInt8)
      w[s.weight] = it->second.w8;
  }
  if (q->emb.int8) {
    w["bert.embeddings.word_embeddings.weight"] = q->emb.word.w8.view();
    w["bert.embeddings.position_embeddings.weight"] = q->emb.pos.w8.view();
    w["bert.embeddings.token_type_embeddings.weight"] = q->emb.type.w8.view();
  }
  return w;
}

}  // namespace

uint32_t adapter_base_checksum(const BertModel& model) {
  uint32_t crc = 0;
  const std::map<std::string, Int8WeightView> int8 = int8_base_weights(model);
  for (const ParamInfo& p : model.layout().params()) {
    // Adapters (bert.*.lora_A/B) are not the base: the same sum before and after attaching them.
    if (p.name.rfind("bert.", 0) != 0 || !model.is_base_param(p.name)) continue;
    crc = crc32c::extend(crc, p.name.data(), p.name.size() + 1);  // the terminating NUL too
    crc = crc32c::extend(crc, p.shape.data(), p.shape.size() * sizeof(int64_t));
    if (const auto it = int8.find(p.name); it != int8.end()) {  // its integers, then the scales
      const Int8WeightView& w = it->second;
      crc = crc32c::extend(crc, w.q, size_t(w.rows) * w.cols);
      crc = crc32c::extend(crc, w.scale, size_t(w.rows) * sizeof(float));
      continue;
    }
    if (!model.holds_fp32(p.name))
      fail("{}: an int8 model holds no fp32 copy of {}: LoRA adapters need a float base",
           model.source().empty() ? "the model" : model.source(), p.name);
    crc = crc32c::extend(crc, model.params() + p.offset, p.numel * sizeof(float));
  }
  return crc;
}

std::string checksum_text(uint32_t crc) { return fmt::format("crc32c:{:08x}", crc); }

const char* adapter_base_dtype(const BertModel& model) {
  return model.quant_mode() == QuantMode::kInt8 ? "int8" : "float32";
}

namespace {

// PEFT's task_type and modules_to_save for a head kind (peft/utils/constants.py, peft_model.py).
const char* peft_task_type(HeadKind kind) {
  switch (kind) {
    case HeadKind::kSequenceClassification:
    case HeadKind::kRegression:
      return "SEQ_CLS";
    case HeadKind::kTokenClassification:
      return "TOKEN_CLS";
    case HeadKind::kQuestionAnswering:
      return "QUESTION_ANS";
    case HeadKind::kNone:
      break;
  }
  return "FEATURE_EXTRACTION";
}

}  // namespace

void save_adapter(const std::string& path, const BertModel& model, const Tokenizer& tokenizer,
                  uint32_t base_checksum, std::map<std::string, std::string> metadata,
                  const std::string& base_name) {
  const LoraConfig* lora = model.lora();
  if (!lora) fail("{}: the model carries no LoRA adapters to write", path);
  const HeadKind kind = model.heads().resolved_kind();
  nlohmann::json cfg = {
      {"peft_type", "LORA"},
      {"task_type", peft_task_type(kind)},
      {"r", lora->r},
      // As the flag was written: the float's shortest decimal, not its double expansion.
      {"lora_alpha", std::stod(fmt::format("{}", lora->alpha))},
      {"lora_dropout", std::stod(fmt::format("{}", lora->dropout))},
      {"target_modules", lora->target_modules},
      {"bias", "none"},
      {"fan_in_fan_out", false},
      {"use_dora", false},
      {"use_rslora", false},
      {"modules_to_save",
       kind == HeadKind::kQuestionAnswering ? std::vector<std::string>{"qa_outputs"}
       : kind == HeadKind::kNone            ? std::vector<std::string>{}
                                            : std::vector<std::string>{"classifier"}},
      {"base_model_name_or_path", base_name},
      {"base_model_checksum", checksum_text(base_checksum)}};
  metadata[kAdapterConfigKey] = cfg.dump();
  metadata[kAdapterBaseDtypeKey] = adapter_base_dtype(model);
  ModelContents c;
  c.config = model.config();
  c.heads = model.heads();
  c.tokenizer = tokenizer_spec(tokenizer);
  for (const ParamInfo& p : model.layout().params()) {
    if (model.is_base_param(p.name)) continue;
    const float* x = model.params() + p.offset;
    for (size_t i = 0; i < p.numel; ++i)
      if (!std::isfinite(x[i]))
        fail("{}: refusing to write non-finite weights ({}[{}] = {}); the run diverged — lower "
             "--learning-rate",
             path, p.name, i, x[i]);
    TensorRecord t;
    t.name = p.name;
    t.shape = p.shape;
    t.dtype = DType::f32;
    t.data = reinterpret_cast<const uint8_t*>(x);
    t.nbytes = p.numel * sizeof(float);
    c.tensors.push_back(std::move(t));
  }
  c.metadata = std::move(metadata);
  write_model_file(path, c);
}

LoraConfig read_lora_config(const std::string& path, const nlohmann::json& j,
                            uint32_t* base_checksum) {
  const std::string where = fmt::format("{}: adapter_config", path);
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) fail("{}: no '{}' key", where, key);
    return j[key];
  };
  const nlohmann::json& type = need("peft_type");
  if (!type.is_string() || type.get<std::string>() != "LORA")
    fail("{}: peft_type {}: only LORA adapters are supported", where, type.dump());
  if (j.contains("bias") && j["bias"] != "none")
    fail("{}: bias {}: only \"none\" is supported (the base's biases stay frozen)", where,
         j["bias"].dump());
  for (const char* flag : {"use_dora", "use_rslora", "fan_in_fan_out"})
    if (j.contains(flag) && j[flag] != false)
      fail("{}: {} {}: not supported", where, flag, j[flag].dump());
  LoraConfig c;
  const nlohmann::json &r = need("r"), &alpha = need("lora_alpha"), &targets = need("target_modules");
  if (!r.is_number_integer()) fail("{}: r {}: expected an integer", where, r.dump());
  if (!alpha.is_number()) fail("{}: lora_alpha {}: expected a number", where, alpha.dump());
  c.r = r.get<int>();
  c.alpha = alpha.get<float>();
  if (j.contains("lora_dropout")) {
    if (!j["lora_dropout"].is_number())
      fail("{}: lora_dropout {}: expected a number", where, j["lora_dropout"].dump());
    c.dropout = j["lora_dropout"].get<float>();
  }
  if (!targets.is_array()) fail("{}: target_modules {}: expected a list", where, targets.dump());
  for (const auto& t : targets) {
    if (!t.is_string()) fail("{}: target_modules: {} is not a string", where, t.dump());
    c.target_modules.push_back(t.get<std::string>());
  }
  const nlohmann::json& sum = need("base_model_checksum");
  unsigned v = 0;
  if (!sum.is_string() || std::sscanf(sum.get<std::string>().c_str(), "crc32c:%8x", &v) != 1)
    fail("{}: base_model_checksum {}: expected \"crc32c:\" and 8 hex digits", where, sum.dump());
  *base_checksum = v;
  return c;
}

AdapterContents read_adapter_file(const ModelFile& file, const std::string& path) {
  const ModelContents& c = file.contents();
  const auto it = c.metadata.find(kAdapterConfigKey);
  if (it == c.metadata.end())
    fail("--adapter {}: a model file, not a LoRA adapter (no '{}' record; adapters are written "
         "by `bertrt finetune --lora-r R ... -o FILE`)",
         path, kAdapterConfigKey);
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  if (!j.is_object())
    fail("--adapter {}: the '{}' record is not a JSON object", path, kAdapterConfigKey);
  AdapterContents a;
  uint32_t checksum = 0;
  a.lora = read_lora_config(path, j, &checksum);
  a.base_checksum = checksum;
  a.config = c.config;
  a.heads = c.heads;
  a.tensors = c.tensors;  // views of `file`'s mapping, alive while the caller keeps it
  if (const auto dt = c.metadata.find(kAdapterBaseDtypeKey); dt != c.metadata.end())
    a.base_dtype = dt->second;
  for (const char* key : {"task", "finetune_task", "finetune_steps"}) {
    const auto kv = c.metadata.find(key);
    if (kv != c.metadata.end()) a.metadata[key] = kv->second;
  }
  return a;
}

std::shared_ptr<const LoraAdapter> make_adapter(const AdapterContents& c, const std::string& path,
                                                const BertModel& base, uint32_t base_checksum,
                                                const std::string& base_path) {
  const BertConfig &a = c.config, &b = base.config();
  if (a.hidden_size != b.hidden_size || a.num_hidden_layers != b.num_hidden_layers ||
      a.intermediate_size != b.intermediate_size || a.num_attention_heads != b.num_attention_heads ||
      a.vocab_size != b.vocab_size)
    fail("--adapter {} was trained on a base of hidden_size {}, {} layers, {} heads, "
         "intermediate_size {}, vocab_size {}; --model {} has {}, {}, {}, {}, {}",
         path, a.hidden_size, a.num_hidden_layers, a.num_attention_heads, a.intermediate_size,
         a.vocab_size, base_path, b.hidden_size, b.num_hidden_layers, b.num_attention_heads,
         b.intermediate_size, b.vocab_size);
  lora_sites(b, c.lora, path);  // r, alpha, dropout, targets: valid on this base
  const std::string have_dtype = adapter_base_dtype(base);
  if (c.base_checksum && base_checksum != *c.base_checksum && c.base_dtype != have_dtype)
    fail("--adapter {} was trained on {} base ({}); --model {} is {} model ({}): an adapter "
         "only applies to the exact base it was trained on ({})",
         path, c.base_dtype == "int8" ? "an int8" : "a " + c.base_dtype,
         checksum_text(*c.base_checksum), base_path,
         have_dtype == "int8" ? "an int8" : "a " + have_dtype, checksum_text(base_checksum),
         c.base_dtype == "int8" ? "give the int8 model it was trained on"
                                : "give its float base, or train an adapter over the int8 model");
  if (c.base_checksum && base_checksum != *c.base_checksum)
    fail("--adapter {} was trained on another base: it expects base weights {}, --model {} has "
         "{} (an adapter only applies to the exact base it was trained on)",
         path, checksum_text(*c.base_checksum), base_path, checksum_text(base_checksum));
  auto adapter = std::make_shared<LoraAdapter>(b, c.heads, c.lora, "--adapter " + path);
  // Every tensor must be in the adapter's layout with its shape, and every tensor of the layout
  // must come from the file.
  const ParamLayout& layout = adapter->layout();
  std::vector<bool> seen(layout.params().size());
  for (const TensorRecord& t : c.tensors) {
    const ParamInfo* p = layout.find(t.name);
    if (!p)
      fail("--adapter {}: tensor '{}' is neither an adapter of its target_modules nor the task "
           "head's",
           path, t.name);
    if (p->shape != t.shape)
      fail("--adapter {}: tensor '{}' has shape [{}], expected [{}]", path, t.name,
           fmt::join(t.shape, ", "), fmt::join(p->shape, ", "));
    seen[size_t(p - layout.params().data())] = true;
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) fail("--adapter {}: tensor '{}' is missing", path, layout.params()[i].name);
  float* w = std::const_pointer_cast<LoraAdapter>(adapter)->weights();
  for (const TensorRecord& t : c.tensors) tensor_to_f32(t, w + layout.at(t.name).offset);
  adapter->base_checksum = c.base_checksum.value_or(base_checksum);
  adapter->source = path;
  adapter->metadata = c.metadata;
  return adapter;
}

std::shared_ptr<const LoraAdapter> load_adapter(const std::string& path, const BertModel& base,
                                                uint32_t base_checksum,
                                                const std::string& base_path) {
  // A folder is a Hugging Face PEFT adapter (io/peft_adapter.h), checked against the base by shape.
  if (is_peft_folder(path))
    return make_adapter(read_peft_adapter(path, base.config()), path, base, base_checksum,
                        base_path);
  OpenOptions open;
  open.verify_checksums = default_verify_checksums();
  const ModelFile file = ModelFile::open(path, open);
  auto adapter = make_adapter(read_adapter_file(file, path), path, base, base_checksum, base_path);
  if (file.mapping()) MappedFile::release_pages(file.mapping()->data(), file.mapping()->size());
  return adapter;
}

void use_adapter(LoadedModel& m, std::shared_ptr<const LoraAdapter> adapter,
                 uint32_t base_checksum) {
  if (adapter && adapter->base_checksum != base_checksum)
    fail("adapter {} was trained on another base: it expects base weights {}, this model ({}) has "
         "{}",
         adapter->source, checksum_text(adapter->base_checksum), m.model->source(),
         checksum_text(base_checksum));
  const LoraAdapter* a = adapter.get();
  m.model->set_adapter(std::move(adapter));
  // The task record: the adapter's while it runs, the base file's again without one.
  const std::map<std::string, std::string>& from = a ? a->metadata : m.file.contents().metadata;
  for (const char* key : {"task", "finetune_task", "finetune_steps"}) {
    const auto kv = from.find(key);
    if (kv != from.end())
      m.metadata[key] = kv->second;
    else
      m.metadata.erase(key);
  }
  if (a)
    m.metadata["adapter"] = a->source;
  else
    m.metadata.erase("adapter");
}

void apply_adapter(LoadedModel& m, const std::string& model_path,
                   const std::string& adapter_path) {
  const uint32_t checksum = adapter_base_checksum(*m.model);
  use_adapter(m, load_adapter(adapter_path, *m.model, checksum, model_path), checksum);
}

void copy_adapter(LoadedModel& m, const LoraAdapter& adapter) {
  BertModel& model = *m.model;
  if (model.quant_mode() == QuantMode::kInt8)
    model.set_heads_over_int8(adapter.heads(), 0);  // an fp32 head (model/lora_int8.h)
  else
    model.set_heads(adapter.heads(), 0);
  model.attach_lora(adapter.lora(), 0, adapter.source);
  float* params = model.params();
  for (const ParamInfo& p : adapter.layout().params())
    std::copy_n(adapter.weights() + p.offset, p.numel, params + model.layout().at(p.name).offset);
  for (const char* key : {"task", "finetune_task", "finetune_steps"}) {
    const auto kv = adapter.metadata.find(key);
    if (kv != adapter.metadata.end())
      m.metadata[key] = kv->second;
    else
      m.metadata.erase(key);
  }
  m.metadata["adapter"] = adapter.source;
}

}  // namespace bertrt
